"""The embedded ChatModel: a GGUF file run in-process by llama.cpp (llama-cpp-python).

- Loaded on the first conversational cell (in a worker thread), kept for the session.
  The weights are memory-mapped (llama.cpp's default), so notebooks share them.
- Generation runs in a worker thread; text reaches the event loop as it is produced.
  The stop button sets a flag checked between prompt batches and between tokens, so a
  cell stops within one batch; the next call waits for that batch on the same thread.
- The prompt is evaluated in batches on top of what the model already holds (llama.cpp's
  KV cache): a follow-up turn only reads what is new. The system context's state is
  also saved under the digest of its tokens, so a new kernel with the same persona and
  catalog starts from it instead of re-reading it.
"""

from __future__ import annotations

import asyncio
import codecs
import ctypes
import hashlib
import json
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from jinja2 import TemplateError

from lily_kernel.errors import ModelError, ModelFault
from lily_kernel.llm.base import ChatRequest, ChatResponse, Usage
from lily_kernel.llm.local_files import LocalModelFile, check_gguf

__all__ = ["LocalModel"]

EVAL_BATCH = 128  # tokens per prompt batch: the stop button waits at most one (~0.45 s here)
DEFAULT_WINDOW = 8192  # tokens, unless configured; a model trained for less gets its own
DEFAULT_ANSWER = 1024  # tokens an answer may take, unless max_tokens says otherwise
SAVED_PREFIX_MIN = 256  # shorter system contexts are cheaper to read than to restore
SAVED_PREFIXES_KEPT = 4
TOP_K, PENALTY_WINDOW, REPEAT_PENALTY, SEED = 40, 64, 1.1, 0  # llama-cpp-python's sampling
_CHATML = (  # for a GGUF without a chat template
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _formatter(llama: Any) -> Any:
    """The chat template from the file's own metadata (ChatML when it has none)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    model = llama._model
    eos, bos = llama.token_eos(), llama.token_bos()
    return Jinja2ChatFormatter(
        template=llama.metadata.get("tokenizer.chat_template") or _CHATML,
        eos_token=model.token_get_text(eos) if eos != -1 else "",
        bos_token=model.token_get_text(bos) if bos != -1 else "",
    )


def _fold(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same conversation in the shape strict templates accept: a system message
    only first, and roles that alternate (later system text and consecutive messages of
    one role are joined into one message)."""
    folded: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "system" and index > 0:
            role = "user"
        if folded and folded[-1]["role"] == role:
            folded[-1] = {"role": role,
                          "content": f"{folded[-1]['content']}\n\n{message['content']}"}
        else:
            folded.append({"role": role, "content": message["content"]})
    return folded


def _choices(schema: dict[str, Any]) -> list[str] | None:
    """Every valid answer, when a schema allows only a few: an object with one required
    property whose value is one of an enum (the skill declaration). None for any other
    schema, which llama.cpp's grammar constrains instead."""
    properties = schema.get("properties")
    if not (schema.get("type") == "object" and isinstance(properties, dict)
            and len(properties) == 1 and schema.get("required") == list(properties)
            and schema.get("additionalProperties") is False):
        return None
    ((name, value),) = properties.items()
    if not (isinstance(value, dict) and set(value) == {"enum"}
            and isinstance(value["enum"], list)):
        return None
    answers = [json.dumps({name: v}, ensure_ascii=False) for v in value["enum"]]
    return list(dict.fromkeys(answers))  # in order, each once


def _following(spelled: list[list[int]], open_: list[int], depth: int) -> dict[int, list[int]]:
    """The open choices grouped by their token at `depth`."""
    groups: dict[int, list[int]] = {}
    for index in open_:
        groups.setdefault(spelled[index][depth], []).append(index)
    return groups


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
        self._llama: Any = None
        self._format: Any = None
        self.last_evaluated = 0  # prompt tokens the last request had to read (not held)
        # Every llama.cpp call runs on this one thread, one at a time: a stopped
        # generation finishes its batch before the next starts, and llama.cpp's OpenMP
        # keeps one team of threads. (A team per calling thread outnumbers the cores,
        # and then libgomp stops its threads spinning between steps: decoding on 2
        # threads fell from ~85 to ~29 tokens/s, measured.)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lily-llama")

    # --- loading -----------------------------------------------------------------

    @property
    def context_window(self) -> int | None:
        return self._llama.n_ctx() if self._llama is not None else None

    def load(self) -> None:
        """Load the file (blocking: call it off the event loop). ModelError if it can't."""
        self._worker.submit(self._load).result()

    def _load(self) -> None:
        if self._llama is not None:
            return
        path = self.file.path
        try:
            check_gguf(path)
            llama = self._open(path, self._requested_window or DEFAULT_WINDOW)
            trained = llama._model.n_ctx_train()
            if self._requested_window is None and 0 < trained < llama.n_ctx():
                llama = self._open(path, trained)  # never more than it was trained for
            self._format = _formatter(llama)
        except (ValueError, RuntimeError, OSError, TemplateError) as exc:
            raise ModelError(
                ModelFault.LOCAL_MODEL,
                f"the local model could not be loaded from {path}: {exc}. "
                "Check the file (LILY_MODEL=local/<file.gguf>), or unset LILY_MODEL to use "
                "the embedded model.",
            ) from exc
        self._llama = llama

    def _open(self, path: Path, window: int) -> Any:
        import llama_cpp

        return llama_cpp.Llama(
            model_path=str(path), n_ctx=window, n_batch=512, n_threads=self.threads,
            n_threads_batch=self.threads, seed=0, use_mmap=True, flash_attn=True,
            verbose=False)

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

        work = loop.run_in_executor(self._worker, self._generate, request, emit, stop)
        try:
            return await work
        except asyncio.CancelledError:
            # The thread stops at its next check (its _StoppedError reaches no one: this
            # await is already gone); the next call waits for it on the same thread.
            stop.set()
            raise

    # --- the worker thread ----------------------------------------------------------

    def _tokens(self, messages: list[dict[str, Any]], generation: bool = True) -> list[int]:
        """The prompt's tokens, rendered by the model's own chat template. A template that
        refuses the conversation's shape (many allow a system message only first, and
        no two user messages in a row) gets it folded into one it accepts."""
        self._format.add_generation_prompt = generation
        try:
            text = self._format(messages=messages).prompt
        except (ValueError, TemplateError):
            try:
                text = self._format(messages=_fold(messages)).prompt
            except (ValueError, TemplateError) as exc:
                raise ModelError(
                    ModelFault.LOCAL_MODEL,
                    f"the local model's chat template cannot render this "
                    f"conversation: {exc}.") from exc
        return list(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def _text_tokens(self, text: str) -> list[int]:
        """Plain text's tokens (no special tokens), to follow a rendered prompt."""
        return list(self._llama.tokenize(text.encode("utf-8"), add_bos=False)) if text else []

    def _prefix_length(self, messages: list[dict[str, Any]], tokens: list[int]) -> int:
        """How many leading tokens are the system context (0 if the template does not
        render it as a prefix of the whole prompt)."""
        if not messages or messages[0].get("role") != "system":
            return 0
        head = self._tokens(messages[:1], generation=False)
        return len(head) if tokens[: len(head)] == head else 0

    def _generate(
        self, request: ChatRequest, emit: Callable[[str], None], stop: threading.Event
    ) -> ChatResponse:
        if stop.is_set():
            raise _StoppedError
        self._load()
        llama = self._llama
        messages = [{"role": m["role"], "content": m.get("content") or ""}
                    for m in request.messages]
        tokens = self._tokens(messages)
        window = llama.n_ctx()
        if len(tokens) >= window:
            raise ModelError(
                ModelFault.CONTEXT_WINDOW,
                f"the request is {len(tokens):,} tokens, more than the local "
                f"model's {window:,}-token context window.")
        self._evaluate(tokens, self._prefix_length(messages, tokens), stop)
        choices = _choices(request.json_schema) if request.json_schema is not None else None
        if choices:
            text, length = self._choose(tokens, choices, stop)
            emit(text)
            return ChatResponse(
                text=text, usage=Usage(prompt_tokens=len(tokens), completion_tokens=length),
                finish_reason="stop", cost=0.0)
        return self._sample(tokens, request, emit, stop)

    def _choose(
        self, tokens: list[int], choices: list[str], stop: threading.Event
    ) -> tuple[str, int]:
        """The choice whose tokens the model finds likeliest after the prompt, and its
        length in tokens.

        Token by token: where the choices still open all go on with the same token, it
        is taken without asking; where they differ, the model's likeliest of their next
        tokens is kept. Each batch reads ahead as far as the way is clear: through
        tokens every open choice shares, and through a decision where only one of the
        next tokens leads to more decisions (` "` rather than ` null`; `skill` among
        `skill_00001`...`skill_00059` and `echo`), with the model's logits kept at
        every decision on the way. If the model goes another way, what was read past
        that point is dropped. So a choice among 60 names costs one or two decode
        steps, where llama.cpp's grammar tests the whole vocabulary at every token; and,
        being greedy, the same prompt always makes the same choice."""
        import llama_cpp

        llama = self._llama
        end = llama.token_eos()  # after a choice's last token: it ends there
        spelled = [[*self._text_tokens(choice), end] for choice in choices]
        if len(tokens) + max(map(len, spelled)) > llama.n_ctx():
            raise ModelError(ModelFault.CONTEXT_WINDOW, "the request leaves no room in the "
                             "local model's context window for its answer.")
        open_, depth = list(range(len(choices))), 0
        unread = tokens[llama.n_tokens:]  # what _evaluate left to this first batch
        while len(open_) > 1:
            batch, decisions = self._read_ahead(spelled, open_, depth, unread)
            if stop.is_set():
                raise _StoppedError
            start = llama.n_tokens
            self._read(batch, [index for index, _, _ in decisions])
            for index, at, following in decisions:
                logits = llama_cpp.llama_get_logits_ith(llama.ctx, index)
                best = max(sorted(following), key=lambda t: logits[t])
                open_, depth = following[best], at + 1
                if index + 1 == len(batch) or batch[index + 1] != best:
                    llama.n_tokens = start + index + 1  # what was read past here is not it
                    unread = [best]
                    break
        (chosen,) = open_
        return choices[chosen], len(spelled[chosen]) - 1

    @staticmethod
    def _read_ahead(
        spelled: list[list[int]], open_: list[int], depth: int, unread: list[int]
    ) -> tuple[list[int], list[tuple[int, int, dict[int, list[int]]]]]:
        """The next batch to read (`unread`, then as far as the way is clear), and its
        decisions: (index in the batch of the token before it, depth, the open choices
        grouped by their token there)."""
        batch, decisions = list(unread), []
        walk = open_
        while len(walk) > 1:
            following = _following(spelled, walk, depth)
            if len(following) > 1:
                decisions.append((len(batch) - 1, depth, following))
                onward = [t for t, rest in following.items() if len(rest) > 1]
                if len(onward) != 1:
                    break
                (token,) = onward
            else:
                (token,) = following
            batch.append(token)
            walk, depth = following[token], depth + 1
        return batch, decisions

    def _read(self, tokens: list[int], outputs: list[int]) -> None:
        """Read `tokens` after what the model holds, in one batch, keeping its logits at
        the batch positions `outputs` (Llama.eval keeps only the last position's)."""
        llama = self._llama
        llama._ctx.kv_cache_seq_rm(-1, llama.n_tokens, -1)
        llama._batch.set_batch(batch=tokens, n_past=llama.n_tokens, logits_all=False)
        for index in outputs:
            llama._batch.batch.logits[index] = True
        llama._ctx.decode(llama._batch)
        llama.input_ids[llama.n_tokens: llama.n_tokens + len(tokens)] = tokens
        llama.n_tokens += len(tokens)

    def _sample(
        self, tokens: list[int], request: ChatRequest, emit: Callable[[str], None],
        stop: threading.Event,
    ) -> ChatResponse:
        """Generate the answer after the prompt, token by token, streaming its text; the
        stop flag is checked before each token."""
        import llama_cpp

        llama = self._llama
        limit = min(llama.n_ctx() - len(tokens),
                    request.max_tokens or self.max_tokens or DEFAULT_ANSWER)
        sampler = self._sampler(request.json_schema)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="ignore")  # as llama-cpp-python
        pieces: list[str] = []
        answered, finish = 0, "length"
        unread = tokens[llama.n_tokens:]  # what _evaluate left to this first step
        try:
            while answered < limit:
                if stop.is_set():
                    raise _StoppedError
                self._read(unread, [len(unread) - 1])
                token = sampler.sample(llama._ctx, -1)
                if llama_cpp.llama_vocab_is_eog(llama._model.vocab, token):
                    finish = "stop"
                    break
                answered += 1
                unread = [token]
                text = decoder.decode(llama.detokenize([token]))
                if text:
                    pieces.append(text)
                    emit(text)
        finally:
            sampler.close()
        if rest := decoder.decode(b"", final=True):
            pieces.append(rest)
            emit(rest)
        return ChatResponse(
            text="".join(pieces),
            usage=Usage(prompt_tokens=len(tokens), completion_tokens=answered),
            finish_reason=finish,
            cost=0.0,
        )

    def _sampler(self, schema: dict[str, Any] | None) -> Any:
        """llama.cpp's sampler chain, as llama-cpp-python's completion builds it: repeat
        penalty over the last 64 answer tokens, top-k 40, top-p 0.95, min-p 0.05,
        temperature, a seeded draw (or under a JSON schema, llama.cpp's grammar after
        the penalty). Without a grammar, the 104 likeliest tokens are taken first: the
        penalty only lowers logits, of at most 64 tokens, so the 40 likeliest after it
        are among those 104, and it is not applied to all 49,152 at every step (~3%
        of decode time, measured)."""
        from llama_cpp._internals import LlamaSampler
        from llama_cpp.llama_grammar import LlamaGrammar

        sampler = LlamaSampler()  # type: ignore[no-untyped-call]
        if schema is None:
            sampler.add_top_k(TOP_K + PENALTY_WINDOW)
        sampler.add_penalties(
            n_vocab=self._llama.n_vocab(), penalty_last_n=PENALTY_WINDOW,
            penalty_repeat=REPEAT_PENALTY, penalty_freq=0.0, penalty_present=0.0)
        if schema is not None:
            grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
            sampler.add_grammar(self._llama._model, grammar)
        if self.temperature <= 0:
            sampler.add_greedy()  # type: ignore[no-untyped-call]
            return sampler
        sampler.add_top_k(TOP_K)
        sampler.add_top_p(0.95)
        sampler.add_min_p(0.05)
        sampler.add_temp(self.temperature)
        sampler.add_dist(SEED)
        return sampler

    def _evaluate(self, tokens: list[int], prefix: int, stop: threading.Event) -> None:
        """Bring the model's state close to the prompt's end, reading only what it does
        not hold yet, in stoppable batches. The last batch (at most EVAL_BATCH tokens, at
        least one) is left to the caller, which reads it with what follows: one decode
        call fewer per request."""
        llama = self._llama
        held = llama.longest_token_prefix(llama._input_ids.tolist(), tokens[:-1])
        saving = prefix >= SAVED_PREFIX_MIN and self.prefix_cache is not None
        restored = False
        if held < prefix and saving:
            restored = self._restore_prefix(tokens[:prefix])
            # A failed restore may have emptied the cache: start from what is still held.
            held = prefix if restored else min(held, llama.n_tokens)
        llama.n_tokens = held  # eval() drops whatever the cache holds past this point
        self.last_evaluated = len(tokens) - held  # what this request reads anew
        position = held
        while (len(tokens) - position > EVAL_BATCH
               or (saving and not restored and position < prefix)):
            if stop.is_set():
                raise _StoppedError
            end = min(len(tokens) - 1, position + EVAL_BATCH)
            if position < prefix < end:
                end = prefix  # stop at the boundary, so the system context can be saved
            llama.eval(tokens[position:end])
            position = end
            if position == prefix and saving and not restored:
                self._save_prefix(tokens[:prefix])

    # --- the system context, kept across kernels ------------------------------------

    def _prefix_file(self, tokens: list[int]) -> Path:
        import llama_cpp

        assert self.prefix_cache is not None
        stat = self.file.path.stat()
        digest = hashlib.sha256(
            f"{self.file.path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|"
            f"{llama_cpp.__version__}|".encode()
            + b"".join(t.to_bytes(4, "little", signed=True) for t in tokens)
        ).hexdigest()
        return self.prefix_cache / f"{digest}.kv"

    def _save_prefix(self, tokens: list[int]) -> None:
        import llama_cpp

        path = self._prefix_file(tokens)
        try:
            self.prefix_cache.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
            partial = path.with_suffix(f".{os.getpid()}.partial")  # kernels save side by side
            array = (llama_cpp.llama_token * len(tokens))(*tokens)
            if llama_cpp.llama_state_seq_save_file(
                    self._llama.ctx, str(partial).encode(), 0, array, len(tokens)):
                partial.replace(path)
            saved = sorted(self.prefix_cache.glob("*.kv"),  # type: ignore[union-attr]
                           key=lambda p: p.stat().st_mtime, reverse=True)
            for old in saved[SAVED_PREFIXES_KEPT:]:
                old.unlink(missing_ok=True)
        except OSError:
            pass  # a cache that cannot be written only costs time

    def _restore_prefix(self, tokens: list[int]) -> bool:
        import llama_cpp

        path = self._prefix_file(tokens)
        if not path.is_file():
            return False
        llama = self._llama
        out = (llama_cpp.llama_token * len(tokens))()
        count = ctypes.c_size_t(0)
        llama._ctx.kv_cache_seq_rm(-1, 0, -1)
        loaded = llama_cpp.llama_state_seq_load_file(
            llama.ctx, str(path).encode(), 0, out, len(tokens), ctypes.byref(count))
        if not loaded or count.value != len(tokens) or list(out) != tokens:
            llama._ctx.kv_cache_seq_rm(-1, 0, -1)
            llama.n_tokens = 0
            path.unlink(missing_ok=True)  # unusable: do not try it again in every kernel
            return False
        llama.input_ids[: len(tokens)] = tokens
        llama.n_tokens = len(tokens)
        os.utime(path)  # most recently used: kept longest
        return True
