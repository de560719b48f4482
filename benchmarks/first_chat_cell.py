"""Benchmark: the first conversational cell, litellm import included, through a real kernel.

    .venv/bin/python benchmarks/first_chat_cell.py [--runs 3]

Starts the Lily kernel with a model configured against a loopback OpenAI-compatible
server and measures: start -> kernel_info reply; the first chat cell (which imports
litellm); the second chat cell (warm). Also shows that litellm is not loaded at start:
the kernel's resident memory before and after the first chat cell.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil
from jupyter_client.manager import start_new_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.openai_server import OpenAIServer, Reply  # noqa: E402


def execute(kc, code: str) -> float:  # type: ignore[no-untyped-def]
    began = time.perf_counter()
    reply = kc.execute_interactive(code, timeout=120, output_hook=lambda msg: None)
    assert reply["content"]["status"] == "ok", reply["content"]
    return time.perf_counter() - began


def one_run(server: OpenAIServer, workspace: Path) -> tuple[float, float, float, float, float]:
    (workspace / "home").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LILY_")}
    env.update(LILY_MODEL="openai/bench", LILY_API_BASE=server.base_url, LILY_EVENT_LOG="0",
               OPENAI_API_KEY="sk-bench-not-a-real-key", HOME=str(workspace / "home"))
    began = time.perf_counter()
    km, kc = start_new_kernel(kernel_name="lily", cwd=str(workspace), env=env)
    try:
        start = time.perf_counter() - began  # start_new_kernel waits for kernel_info
        process = psutil.Process(km.provisioner.process.pid)  # type: ignore[union-attr]
        rss_before = process.memory_info().rss / 2**20
        server.script(Reply(text="First answer."), Reply(text="Second answer."))
        first = execute(kc, "hello")
        second = execute(kc, "hello again")
        rss_after = process.memory_info().rss / 2**20
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return start, first, second, rss_before, rss_after


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, OpenAIServer() as server:
        runs = [one_run(server, Path(tmp)) for _ in range(args.runs)]
    med = [statistics.median(column) for column in zip(*runs, strict=True)]
    print(f"kernel start -> kernel_info (model configured): median {med[0]:.2f} s")
    print(f"first chat cell (imports litellm): median {med[1]:.2f} s")
    print(f"second chat cell: median {med[2] * 1000:.0f} ms")
    print(f"kernel RSS before the first chat cell {med[3]:.0f} MiB, after {med[4]:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
