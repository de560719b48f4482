"""Benchmark: the first conversational cell through a real kernel, remote model configured.

    .venv/bin/python benchmarks/first_chat_cell.py [--runs 3] [--wait 5]

The kernel starts with a model configured against a loopback OpenAI-compatible server,
so Lily warms the model path (litellm, the OpenAI client's chat resources) in the
background once it is idle. Measured, per run, each in a fresh kernel:

- warm: a chat cell run `--wait` seconds after start vs the second chat cell
  (goal: at most 0.3 s slower);
- cold: a chat cell run at once after start (the warm-up cannot have finished);
- interrupt: the stop button 0.2 s into a chat cell run at once after start, while the
  model path is still importing; time to the execute_reply (goal: within 0.5 s, as a
  KeyboardInterrupt).

Also the kernel's resident memory before and after the first chat cell.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from jupyter_client.manager import KernelManager, start_new_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.openai_server import OpenAIServer, Reply


def execute(kc: Any, code: str) -> float:
    began = time.perf_counter()
    reply = kc.execute_interactive(code, timeout=120, output_hook=lambda msg: None)
    assert reply["content"]["status"] == "ok", reply["content"]
    return time.perf_counter() - began


def start(server: OpenAIServer, workspace: Path) -> tuple[KernelManager, Any]:
    (workspace / "home").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LILY_")}
    env.update(LILY_MODEL="openai/bench", LILY_API_BASE=server.base_url, LILY_EVENT_LOG="0",
               LILY_TRUST="workspace",
               OPENAI_API_KEY="sk-bench-not-a-real-key", HOME=str(workspace / "home"))
    return start_new_kernel(kernel_name="lily", cwd=str(workspace), env=env)


def warm_run(server: OpenAIServer, workspace: Path, wait: float) -> tuple[float, float, float,
                                                                          float]:
    km, kc = start(server, workspace)
    try:
        process = psutil.Process(km.provisioner.pid)  # type: ignore[union-attr]
        time.sleep(wait)
        rss_before = process.memory_info().rss / 2**20
        server.script(Reply(text="First answer."), Reply(text="Second answer."))
        first = execute(kc, "hello")
        second = execute(kc, "hello again")
        rss_after = process.memory_info().rss / 2**20
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return first, second, rss_before, rss_after


def cold_run(server: OpenAIServer, workspace: Path) -> float:
    km, kc = start(server, workspace)
    try:
        server.script(Reply(text="First answer."))
        return execute(kc, "hello")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def interrupt_run(server: OpenAIServer, workspace: Path) -> tuple[float, str]:
    km, kc = start(server, workspace)
    try:
        server.script(Reply(text="too late", delay=30))
        msg_id = kc.execute("hello")
        time.sleep(0.2)
        began = time.perf_counter()
        km.interrupt_kernel()
        while True:
            reply = kc.get_shell_msg(timeout=60)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        return time.perf_counter() - began, str(reply["content"].get("ename"))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--wait", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, OpenAIServer() as server:
        workspace = Path(tmp)
        warm = [warm_run(server, workspace, args.wait) for _ in range(args.runs)]
        cold = [cold_run(server, workspace) for _ in range(args.runs)]
        stops = [interrupt_run(server, workspace) for _ in range(args.runs)]
    first, second, rss_before, rss_after = (statistics.median(c) for c in zip(*warm,
                                                                             strict=True))
    slower = statistics.median(f - s for f, s, _, _ in warm)
    print(f"chat cell {args.wait:g} s after start: median {first * 1000:.0f} ms; second chat "
          f"cell {second * 1000:.0f} ms; slower by {slower * 1000:.0f} ms (goal <= 300 ms)")
    print(f"chat cell at once after start (cold): median {statistics.median(cold):.2f} s")
    names = sorted({name for _, name in stops})
    print(f"interrupt during the first chat cell: ends in median "
          f"{statistics.median(t for t, _ in stops) * 1000:.0f} ms, max "
          f"{max(t for t, _ in stops) * 1000:.0f} ms (goal <= 500 ms) as {', '.join(names)}")
    print(f"kernel RSS before the first chat cell {rss_before:.0f} MiB, after {rss_after:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
