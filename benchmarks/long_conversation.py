"""Benchmark: the embedded model's turns before and after the history is trimmed.

    .venv/bin/python benchmarks/long_conversation.py [--turns 30] [--window 4096]

One session, one chat cell after another, as a person keeps talking in a notebook;
each answer runs to its end. Once the history no longer fits the context window, Lily
leaves the oldest turns out (prompting/budget.py: at fixed checkpoints) and the model
drops them from its cache (llm/llama_engine.py). Per turn: the seconds the cell took,
the seconds to its first answer text (what reading the prompt costs), the prompt
tokens the model had to read anew (the rest it held from the turn before), and the
footer. Goal (issue
22): the median turn after the first trim within 1.5x of the median turn before it, and
no footer claiming more tokens in than the window holds.

`--window` sets LILY_CONTEXT_WINDOW (smaller than the default 8,192 so that the trim
comes within a few minutes on 2 cores; the code path is the same).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lily_kernel.display import Notice, Reply, Shown  # noqa: E402
from lily_kernel.llm.local_model import LocalModel  # noqa: E402
from lily_kernel.runtime.runtime import LilyRuntime  # noqa: E402

# Requests a person might send one after another; each asks for a few paragraphs.
REQUESTS = [
    "Explain how a hash table works, with an example in Python.",
    "What are the trade-offs between lists and tuples in Python?",
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Describe three ways to speed up a slow pandas groupby.",
    "How does HTTP caching work? Mention ETag and Cache-Control.",
    "Write a function that merges two sorted lists, and explain it.",
    "What is the difference between a process and a thread?",
    "Give me a packing list for a weekend hiking trip, with reasons.",
    "Explain gradient descent to a high school student.",
    "Write a poem about autumn in a city.",
    "How do I write a good commit message? Give examples.",
    "Explain what a Jupyter kernel is and how it talks to the notebook.",
]


class Turn:
    """A sink that notes the first answer text, the notices and the footer."""

    def __init__(self) -> None:
        self.began = time.perf_counter()
        self.first: float | None = None
        self.footer = ""
        self.notices: list[str] = []

    def show(self, value: Shown) -> None:
        if isinstance(value, Reply):
            self.stream(value.markdown)
            self.footer = value.footer or ""
        elif isinstance(value, Notice):
            self.notices.append(value.text)

    def stream(self, markdown: str) -> None:
        if self.first is None and markdown.strip():
            self.first = time.perf_counter() - self.began

    async def ask(self, question: str) -> str | None:
        return None


def tokens_in(footer: str) -> int | None:
    found = re.search(r"([\d,]+) tokens in", footer)
    return int(found.group(1).replace(",", "")) if found else None


async def main_async(turns: int, window: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        environ = {**os.environ, "LILY_EVENT_LOG": "0", "LILY_HOME": str(Path(tmp) / "home"),
                   "LILY_TRUST": "workspace", "LILY_CONTEXT_WINDOW": str(window)}
        environ.pop("LILY_MODEL", None)
        runtime = LilyRuntime.start(workspace, environ)
        model = await runtime.get_model()
        if not isinstance(model, LocalModel):
            print(f"needs the embedded model; the session has {model.name}", file=sys.stderr)
            return 2
        before: list[float] = []
        after: list[float] = []
        firsts: tuple[list[float], list[float]] = ([], [])
        over = 0
        print(f"window {window:,} tokens; {turns} turns in one session")
        print(" turn  seconds  first text  read anew  tokens in  trimmed")
        for index in range(turns):
            sink = Turn()
            await runtime.run_cell(REQUESTS[index % len(REQUESTS)], sink)
            took = time.perf_counter() - sink.began
            trimmed = any("left out" in n for n in sink.notices)
            sent = tokens_in(sink.footer)
            over += sent is not None and sent > window
            (after if trimmed or after else before).append(took)
            if sink.first is not None:
                firsts[bool(after)].append(sink.first)
            first = f"{sink.first:.2f}" if sink.first is not None else "-"
            print(f"{index + 1:5}  {took:7.2f}  {first:>10}  {model.last_evaluated:9,}  "
                  f"{sent if sent is not None else '-':>9}  {'yes' if trimmed else ''}",
                  flush=True)
        runtime.close()
    if not before or not after:
        print("the history was never trimmed (or trimmed from the first turn): "
              "more turns or a smaller --window", file=sys.stderr)
        return 1
    ratio = statistics.median(after) / statistics.median(before)
    print(f"median turn before the first trim: {statistics.median(before):.2f} s "
          f"({len(before)} turns); from it on: {statistics.median(after):.2f} s "
          f"({len(after)} turns, worst {max(after):.2f} s); ratio {ratio:.2f} (goal <= 1.5)")
    print(f"first answer text, median: {statistics.median(firsts[0]):.2f} s before, "
          f"{statistics.median(firsts[1]):.2f} s from the first trim on "
          f"(worst {max(firsts[1]):.2f} s)")
    print(f"footers claiming more tokens in than the window: {over}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--window", type=int, default=4096)
    args = parser.parse_args()
    return asyncio.run(main_async(args.turns, args.window))


if __name__ == "__main__":
    sys.exit(main())
