"""The embedded ChatModel: a GGUF file run in-process by llama.cpp (llm/llama_engine.py).

- Loaded on the first conversational cell (in a worker thread), kept for the session.
  The weights are memory-mapped (llama.cpp's default), so notebooks share them.
- Generation runs in a worker thread; text reaches the event loop as it is produced.
  The stop button sets a flag checked between prompt batches and between tokens, so a
  cell stops within one batch; the next call waits for that batch on the same thread.
- A request with the skill declaration's schema is answered by choosing among its
  answers (llm/choice.py); any other schema is followed under llama.cpp's grammar.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from jinja2 import TemplateError

from lily_kernel.errors import ModelError, ModelFault
from lily_kernel.llm.base import ChatRequest, ChatResponse, Usage
from lily_kernel.llm.choice import choices
from lily_kernel.llm.llama_engine import LlamaEngine
from lily_kernel.llm.local_files import LocalModelFile, check_gguf

__all__ = ["DEFAULT_WINDOW", "LocalModel", "default_threads"]

DEFAULT_WINDOW = 8192  # tokens, unless configured; a model trained for less gets its own
DEFAULT_ANSWER = 1024  # tokens an answer may take, unless max_tokens says otherwise


class _StoppedError(Exception):
    """The person pressed stop; the worker thread gives up at the next check."""


def default_threads() -> int:
    """The cores this process may use, at most 4.

    Measured on 2 cores (docs/benchmarks.md): idle, two threads read the prompt at 255
    tokens/s and decode at 79, one thread at 137 and 47. But llama.cpp's threads wait
    for each other at every step, so when other processes keep the cores busy two
    threads fall far behind one (57 and 11 against 130 and 44): `local_threads: 1` is
    the setting for a machine where several kernels answer at once."""
    return max(1, min(4, len(os.sched_getaffinity(0))))


class LocalModel:
    """A ChatModel backed by llama.cpp. It cannot call tools; it can follow a JSON schema."""

    supports_tools = False

    def __init__(
        self,
        file: LocalModelFile,
        *,
        context_window: int | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        prefix_cache: Path | None = None,
        threads: int | None = None,
    ) -> None:
        self.name = file.name
        self.file = file
        self.temperature = 0.2 if temperature is None else temperature
        self.max_tokens = max_tokens
        self.prefix_cache = prefix_cache
        self.threads = threads or default_threads()
        self._requested_window = context_window
        self.engine: LlamaEngine | None = None
        # Every llama.cpp call runs on this one thread, one at a time: a stopped
        # generation finishes its batch before the next starts, and llama.cpp's OpenMP
        # keeps one team of threads. (A team per calling thread outnumbers the cores,
        # and then libgomp stops its threads spinning between steps: decoding on 2
        # threads fell from ~85 to ~29 tokens/s, measured.)
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lily-llama")

    @property
    def context_window(self) -> int | None:
        return self.engine.window if self.engine is not None else None

    @property
    def last_evaluated(self) -> int:
        """Prompt tokens the last request had to read (not held already)."""
        return self.engine.last_evaluated if self.engine is not None else 0

    def load(self) -> None:
        """Load the file (blocking: call it off the event loop). ModelError if it can't."""
        self.worker.submit(self._load).result()

    def _load(self) -> LlamaEngine:
        if self.engine is not None:
            return self.engine
        path = self.file.path
        try:
            check_gguf(path)
            self.engine = LlamaEngine(path, self._requested_window, self.threads,
                                      DEFAULT_WINDOW, self.prefix_cache)
        except (ValueError, RuntimeError, OSError, TemplateError) as exc:
            raise ModelError(
                ModelFault.LOCAL_MODEL,
                f"the local model could not be loaded from {path}: {exc}. "
                "Check the file (LILY_MODEL=local/<file.gguf>), or unset LILY_MODEL to use "
                "the embedded model.",
            ) from exc
        return self.engine

    # --- the seam ------------------------------------------------------------------

    async def complete(self, request: ChatRequest, on_text: Callable[[str], None]) -> ChatResponse:
        loop = asyncio.get_running_loop()
        stop = threading.Event()

        def deliver(text: str) -> None:
            if not stop.is_set():
                on_text(text)

        def emit(text: str) -> None:
            if not stop.is_set():
                loop.call_soon_threadsafe(deliver, text)

        told = request.on_reading
        if told is not None:  # said on the event loop, as the text is
            def reading(count: int) -> None:
                loop.call_soon_threadsafe(told, count)

            request = dataclasses.replace(request, on_reading=reading)
        work = loop.run_in_executor(self.worker, self._generate, request, emit, stop)
        try:
            return await work
        except asyncio.CancelledError:
            # The thread stops at its next check (its _StoppedError reaches no one: this
            # await is already gone); the next call waits for it on the same thread.
            stop.set()
            raise

    # --- the worker thread ----------------------------------------------------------

    def _generate(
        self, request: ChatRequest, emit: Callable[[str], None], stop: threading.Event
    ) -> ChatResponse:
        def check() -> None:
            if stop.is_set():
                raise _StoppedError

        check()
        engine = self._load()
        messages = [{"role": m["role"], "content": m.get("content") or ""}
                    for m in request.messages]
        tokens = engine.tokens(messages)
        if len(tokens) >= engine.window:
            raise ModelError(
                ModelFault.CONTEXT_WINDOW,
                f"the request is {len(tokens):,} tokens, more than the local "
                f"model's {engine.window:,}-token context window.")
        engine.evaluate(tokens, engine.prefix_length(messages, tokens), check,
                        request.on_reading)
        answers = choices(request.json_schema) if request.json_schema is not None else None
        if answers:
            chosen, length = engine.choose(tokens, answers, check)
            emit(answers[chosen])
            return ChatResponse(
                text=answers[chosen], usage=Usage(prompt_tokens=len(tokens),
                                                  completion_tokens=length),
                finish_reason="stop", cost=0.0)
        pieces: list[str] = []

        def collect(text: str) -> None:
            pieces.append(text)
            emit(text)

        limit = min(engine.window - len(tokens),
                    request.max_tokens or self.max_tokens or DEFAULT_ANSWER)
        answered, finish = engine.sample(tokens, limit, request.json_schema, self.temperature,
                                         collect, check)
        return ChatResponse(
            text="".join(pieces),
            usage=Usage(prompt_tokens=len(tokens), completion_tokens=answered),
            finish_reason=finish,
            cost=0.0,
        )
