"""Benchmark: how soon a chat turn's answer starts with the embedded model, with and
without a skill, and whether answers repeat lines.

    .venv/bin/python benchmarks/skill_turns.py [--split heldout] [--answers 10]

The routing eval set's workspace (evals/routing, assembled from ../shared/corpus), the
embedded model loaded once and each request sent as the first chat cell of a fresh
session (as `lily eval` does): the seconds from the cell's start to its first streamed
answer text, for the turns that select a skill (goal: median <= 3 s, worst <= 6 s on 2
cores) and, beside them in the same run, for the turns that select none. Each turn is
stopped at its first text (as the stop button would), except the first `--answers`,
which run to the end: how many of those repeat a line of 20 characters or more.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from routing_set import CORPUS, link_skills, requests  # noqa: E402

from lily_kernel.display import Notice, Reply, Shown  # noqa: E402
from lily_kernel.runtime.runtime import LilyRuntime  # noqa: E402


class FirstText:
    """A sink that notes when the answer's first text streams, and the whole answer."""

    def __init__(self, began: float, stop: asyncio.Event | None) -> None:
        self.began, self.stop = began, stop
        self.first: float | None = None
        self.answer = ""
        self.skill: str | None = None

    def show(self, value: Shown) -> None:
        if isinstance(value, Reply):
            self.answer = value.markdown
            self.stream(value.markdown)
        elif isinstance(value, Notice) and value.text.startswith("Skill: "):
            self.skill = value.text.split()[1]

    def stream(self, markdown: str) -> None:
        if self.first is None and markdown.strip():
            self.first = time.perf_counter() - self.began
            if self.stop is not None:
                self.stop.set()

    async def ask(self, question: str) -> str | None:
        return None


async def turn(workspace: Path, environ: dict[str, str], model: Any, query: str,
               whole: bool) -> FirstText:
    runtime = LilyRuntime.start(workspace, environ)
    runtime.model = model
    stop = None if whole else asyncio.Event()
    sink = FirstText(time.perf_counter(), stop)
    task = asyncio.ensure_future(runtime.run_cell(query, sink))
    if stop is not None:
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):  # stopped, or a fault
        await task
    runtime.close()
    return sink


def repeats(answer: str) -> bool:
    """Whether a line of 20 characters or more comes twice (a code fence, a brace or a
    short `return x` may rightly repeat; a sentence or a heading should not)."""
    lines = Counter(line.strip() for line in answer.splitlines() if len(line.strip()) >= 20)
    return any(count > 1 for count in lines.values())


async def main_async(split: str, answers: int) -> None:
    chosen = requests(None if split == "both" else split)
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "workspace"
        link_skills(workspace / "skills")
        environ = {**os.environ, "LILY_EVENT_LOG": "0", "LILY_HOME": str(Path(tmp) / "home"),
                   "LILY_TRUST": "workspace"}
        environ.pop("LILY_MODEL", None)
        first = LilyRuntime.start(workspace, environ)
        model = await first.get_model()
        await turn(workspace, environ, model, "hello", False)  # the persona's prefix, read once
        with_skill: list[float] = []
        without: list[float] = []
        repeated = whole = silent = 0
        for index, request in enumerate(chosen):
            sink = await turn(workspace, environ, model, request["query"], index < answers)
            if sink.first is None:  # no text at all: a fault, counted and said
                silent += 1
                continue
            (with_skill if sink.skill else without).append(sink.first)
            if index < answers:
                whole += 1
                repeated += repeats(sink.answer)
    print(f"{split}: {len(chosen)} requests, each the first chat cell of a fresh session")
    for label, times in (("selects a skill", with_skill), ("selects none", without)):
        if times:
            print(f"  {label:16} {len(times):3} turns: first text median "
                  f"{statistics.median(times):.2f} s, worst {max(times):.2f} s")
    print(f"  answers run to the end: {whole}; repeating a line: {repeated}")
    print(f"  turns with no answer text (faults): {silent}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tune", "heldout", "both"), default="heldout")
    parser.add_argument("--answers", type=int, default=10)
    args = parser.parse_args()
    if not CORPUS.is_dir():
        print(f"skill_turns: needs {CORPUS} (the shared corpus)", file=sys.stderr)
        return 2
    asyncio.run(main_async(args.split, args.answers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
