"""Benchmark: what a shell command costs in the session's sandbox (execution/shell_session.py)
against a sandbox of its own (how skill scripts still run), in one run:

    .venv/bin/python benchmarks/shell_session.py [--samples 20]

Each sample runs `/bin/sh -c true` both ways, interleaved, in the same workspace, with
the same mounts, limits and environment (no proxy): once through `run_process` (its own
bubblewrap, the limiter, a control group where the host allows one), once handed to the
session's sandbox. The first command of the session lays the sandbox and is reported
apart; the medians leave it out.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lily_kernel.execution.limits import Limits
from lily_kernel.execution.plan import plan_process
from lily_kernel.execution.runner import run_process
from lily_kernel.execution.sandbox import find_sandbox
from lily_kernel.execution.shell_session import SessionSpec, ShellSessions

COMMAND = ["/bin/sh", "-c", "true"]


async def measure(samples: int, workspace: Path, home: Path) -> dict[str, float]:
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home)}
    box = find_sandbox(env)
    if box.bwrap is None:
        sys.exit(f"no sandbox here: {box.reason}")
    sessions = ShellSessions()
    alone, shared = [], []
    try:
        for _ in range(samples + 1):
            plan = plan_process(COMMAND, workspace, [], env, box, limits=Limits())
            began = time.perf_counter()
            await run_process(plan, 60)
            alone.append(time.perf_counter() - began)
            plan = plan_process(COMMAND, workspace, [], env, box, limits=Limits())
            spec = SessionSpec.of(box.bwrap, plan, None, [], [])
            began = time.perf_counter()
            await sessions.run(plan, spec, COMMAND, 60, lambda name, text: None)
            shared.append(time.perf_counter() - began)
    finally:
        sessions.close()
    return {"first_in_session_ms": shared[0] * 1000,
            "alone_median_ms": statistics.median(alone[1:]) * 1000,
            "session_median_ms": statistics.median(shared[1:]) * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20)
    samples = parser.parse_args().samples
    with tempfile.TemporaryDirectory() as root:
        workspace, home = Path(root) / "workspace", Path(root) / "home"
        workspace.mkdir()
        home.mkdir()
        figures = asyncio.run(measure(samples, workspace, home))
    for name, value in figures.items():
        print(f"{name}: {value:.1f}")
    print(f"ratio alone/session: {figures['alone_median_ms'] / figures['session_median_ms']:.1f}x")


if __name__ == "__main__":
    main()
