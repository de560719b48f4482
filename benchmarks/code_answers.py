"""Eval: does the embedded model's code run, and is its answer right, beside its plain answers?

    .venv/bin/python benchmarks/code_answers.py [--only mul,weekday] [--max-tokens 256]
        [--out results.json]

For each request of evals/code_answers/requests.json (written as people type them, the
answers worked out by hand), in the same run: (a) Lily with the embedded model offered
one fenced python block (policy `auto`, so the code runs unasked, in the sandboxed
kernel), and (b) the same model with `python` denied, so nothing is offered and it
answers plainly. Each request is a new conversation (`/new`). Prints, per request and
in all, whether the answer held a python block, whether its code ran without an error,
whether the final answer (what the person reads) is right, and the seconds it took.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lily_kernel.display import Code, Reply, RunOutput, Shown  # noqa: E402
from lily_kernel.runtime import LilyRuntime  # noqa: E402

EVAL = REPO / "evals" / "code_answers"
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")


class Sink:
    """What a cell showed; nobody answers (the policy is `auto`: nothing asks)."""

    def __init__(self) -> None:
        self.values: list[Shown] = []

    def show(self, value: Shown) -> None:
        self.values.append(value)

    def stream(self, markdown: str) -> None: ...

    async def ask(self, question: str) -> str | None:
        return None


@dataclass
class Outcome:
    id: str
    mode: str  # code, plain
    block: bool  # the answer held a python block that went to the gate
    ran: bool  # its code ran without an error
    right: bool
    seconds: float
    answer: str


def numbers(text: str) -> list[float]:
    found = []
    for match in NUMBER.findall(text):
        try:
            found.append(float(match.replace(",", "")))
        except ValueError:
            continue
    return found


def is_right(item: dict[str, Any], answer: str, image: bool) -> bool:
    if item.get("image"):
        return image
    if "text" in item:
        low = answer.lower()
        return any(t.lower() in low for t in item["text"])
    expected = float(item["number"])
    tolerance = float(item.get("tolerance", 0))
    return any(math.isclose(n, expected, rel_tol=tolerance, abs_tol=1e-9)
               for n in numbers(answer))


def workspace(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir()
    shutil.copy(EVAL / "sales.csv", folder / "sales.csv")
    return folder


def start(root: Path, name: str, max_tokens: int, **extra: str) -> LilyRuntime:
    env = {"LILY_MODEL": "local", "LILY_HOME": str(root / "home"), "LILY_TRUST": "workspace",
           "LILY_EVENT_LOG": "1", "LILY_POLICY": "auto", "LILY_MAX_TOKENS": str(max_tokens),
           "LILY_FOOTER": "0", "PATH": "/usr/bin:/bin", "HOME": str(root / "home"), **extra}
    return LilyRuntime.start(workspace(root, name), env, session_id=name)


def code_runs(runtime: LilyRuntime) -> list[dict[str, Any]]:
    assert runtime.log.path is not None
    events = [json.loads(line) for line in runtime.log.path.read_text().splitlines()]
    return [e["data"] for e in events if e["event"] == "code_run"]


async def ask(runtime: LilyRuntime, item: dict[str, Any], mode: str) -> Outcome:
    await runtime.run_cell("/new", Sink())
    before = len(code_runs(runtime))
    sink = Sink()
    began = time.monotonic()
    try:
        await runtime.run_cell(item["ask"], sink)
    except Exception as exc:  # noqa: BLE001 - a failed turn is an outcome, not a crash
        sink.values.append(Reply(f"[failed: {exc}]"))
    seconds = time.monotonic() - began
    runs = code_runs(runtime)[before:]
    replies = [v.markdown for v in sink.values if isinstance(v, Reply)]
    answer = replies[-1] if replies else ""
    image = any(isinstance(v, RunOutput) and "image/png" in v.output.get("data", {})
                for v in sink.values)
    block = bool(runs) or any(isinstance(v, Code) for v in sink.values)
    ran = bool(runs) and all(r["status"] == "ok" for r in runs)
    return Outcome(item["id"], mode, block, ran, is_right(item, answer, image),
                   round(seconds, 1), answer)


def summary(outcomes: list[Outcome], mode: str) -> str:
    mine = [o for o in outcomes if o.mode == mode]
    n = len(mine)
    blocks = sum(o.block for o in mine)
    ran = sum(o.ran for o in mine)
    right = sum(o.right for o in mine)
    seconds = sum(o.seconds for o in mine) / max(1, n)
    return (f"{mode:5}: {n} requests; a python block {blocks}/{n}; ran without error "
            f"{ran}/{n}; right {right}/{n} ({right / max(1, n):.0%}); "
            f"{seconds:.1f} s a request")


async def main_async(only: set[str], max_tokens: int, out: Path | None) -> None:
    items = [r for r in json.loads((EVAL / "requests.json").read_text())["requests"]
             if not only or r["id"] in only]
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        code = start(root, "code", max_tokens)
        plain = start(root, "plain", max_tokens, LILY_TOOLS_DENY="python,shell")
        try:
            for item in items:
                for mode, runtime in (("code", code), ("plain", plain)):
                    outcome = await ask(runtime, item, mode)
                    outcomes.append(outcome)
                    print(f"{item['id']:12} {mode:5} block={outcome.block!s:5} "
                          f"ran={outcome.ran!s:5} right={outcome.right!s:5} "
                          f"{outcome.seconds:6.1f}s  {' '.join(outcome.answer.split())[:90]}",
                          flush=True)
        finally:
            code.close()
            plain.close()
    print(summary(outcomes, "code"))
    print(summary(outcomes, "plain"))
    if out is not None:
        out.write_text(json.dumps([asdict(o) for o in outcomes], indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="request ids, comma-separated")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    asyncio.run(main_async(only, args.max_tokens, args.out))


if __name__ == "__main__":
    main()
