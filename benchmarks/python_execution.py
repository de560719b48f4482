"""Benchmark, the session's Python (issue 29's goals), each figure beside its baseline
from the same run:

    .venv/bin/python benchmarks/python_execution.py [--runs 10] [--calls 50]

1. start: the subkernel started in the sandbox (Lily's PythonHost: bubblewrap, IPC
   sockets) against the same kernel started by jupyter_client without it (TCP on
   loopback, as JupyterLab starts one), alternating; medians to the kernel_info reply
   and `wait_for_ready`. Target: ratio <= 1.3x.
2. overhead: a `python` call through Lily's tool gate (the question skipped by policy,
   the code shown, outputs converted, the event written) against a raw
   jupyter_client `execute_interactive` of the same code on an unsandboxed kernel;
   the median difference. Target: <= 20 ms.
3. stop: a real Lily kernel running `/python while True: pass`; the stop button
   (SIGINT, as JupyterLab sends it) to the cell's execute_reply, then the namespace
   read back. Target: <= 1 s, namespace kept.
4. kill -9: a real Lily kernel whose code started detached sleepers, killed with
   SIGKILL; the processes it started still alive 2 s later. Target: 0.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager, start_new_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lily_kernel.execution.kernelspec import choose_kernel
from lily_kernel.execution.python_host import PythonHost
from lily_kernel.execution.sandbox import find_sandbox
from lily_kernel.runtime import LilyRuntime
from lily_kernel.runtime.sink import SilentSink

CODE = "x = sum(range(1000))\nx"


def bench_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LILY_")}
    home.mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home), LILY_EVENT_LOG="1", LILY_TRUST="workspace",
               LILY_TOOLS_ALLOW="python")
    return env


async def start_plain(workspace: Path) -> tuple[AsyncKernelManager, object, float]:
    choice = choose_kernel(None)
    began = time.perf_counter()
    km = AsyncKernelManager()
    km._kernel_spec = KernelSpec(argv=list(choice.argv), display_name="plain",
                                 language="python", interrupt_mode="message", env={})
    await km.start_kernel(cwd=str(workspace), independent=True, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    kc = km.client()
    kc.start_channels()
    await kc.wait_for_ready(timeout=60)
    await kc.execute_interactive("", output_hook=lambda _msg: None)  # as the host's first run
    return km, kc, time.perf_counter() - began


async def start_sandboxed(workspace: Path, environ: dict[str, str]) -> tuple[PythonHost, float]:
    host = PythonHost(environ, workspace, [workspace / "lily.yaml"],
                      lambda: find_sandbox(environ))
    began = time.perf_counter()
    await host.run("", lambda _output: None)  # starts it (wait_for_ready), then an empty cell
    return host, time.perf_counter() - began


async def bench_start(workspace: Path, environ: dict[str, str], runs: int) -> None:
    plain, boxed = [], []
    for run in range(runs + 1):  # run 0 warms the page cache
        km, kc, took = await start_plain(workspace)
        kc.stop_channels()  # type: ignore[attr-defined]
        await km.shutdown_kernel(now=True)
        host, took_boxed = await start_sandboxed(workspace, environ)
        host.close()
        if run:
            plain.append(took)
            boxed.append(took_boxed)
    p, b = statistics.median(plain), statistics.median(boxed)
    print(f"start -> ready -> first empty run: plain jupyter_client {p * 1000:.0f} ms, "
          f"sandboxed subkernel {b * 1000:.0f} ms, ratio {b / p:.2f}x (target <= 1.3x)")


async def bench_overhead(workspace: Path, environ: dict[str, str], calls: int) -> None:
    km, kc, _ = await start_plain(workspace)
    runtime = LilyRuntime.start(workspace, environ)
    sink = SilentSink()
    try:
        await runtime.gate.run(sink, "python", {"code": CODE}, "owner")  # starts the kernel
        raw, lily = [], []
        for _ in range(calls):
            began = time.perf_counter()
            await kc.execute_interactive(CODE, output_hook=lambda _msg: None)  # type: ignore[attr-defined]
            raw.append(time.perf_counter() - began)
            began = time.perf_counter()
            outcome = await runtime.gate.run(sink, "python", {"code": CODE}, "owner")
            lily.append(time.perf_counter() - began)
            assert outcome.status == "ran" and "499500" in outcome.text, outcome
        r, li = statistics.median(raw), statistics.median(lily)
        print(f"python call ({calls} calls): raw execute_interactive {r * 1000:.1f} ms, "
              f"through Lily's gate {li * 1000:.1f} ms, overhead {(li - r) * 1000:.1f} ms "
              "(target <= 20 ms)")
    finally:
        runtime.close()
        kc.stop_channels()  # type: ignore[attr-defined]
        await km.shutdown_kernel(now=True)


def lily_kernel(workspace: Path, environ: dict[str, str]) -> tuple[object, object]:
    return start_new_kernel(kernel_name="lily", cwd=str(workspace), env=environ,
                            startup_timeout=60)


def reply_to(kc: object, msg_id: str) -> dict[str, object]:
    while True:
        reply = kc.get_shell_msg(timeout=60)  # type: ignore[attr-defined]
        if reply["parent_header"]["msg_id"] == msg_id:
            return reply["content"]  # type: ignore[no-any-return]


def bench_stop(workspace: Path, environ: dict[str, str], runs: int) -> None:
    km, kc = lily_kernel(workspace, environ)
    try:
        assert reply_to(kc, kc.execute("/python kept = 7"))["status"] == "ok"  # type: ignore[attr-defined]
        stops = []
        for _ in range(runs):
            msg_id = kc.execute("/python while True: pass")  # type: ignore[attr-defined]
            time.sleep(1.0)
            began = time.perf_counter()
            km.interrupt_kernel()  # type: ignore[attr-defined]
            reply = reply_to(kc, msg_id)
            stops.append(time.perf_counter() - began)
            assert reply["ename"] == "KeyboardInterrupt", reply
            after = reply_to(kc, kc.execute("/python assert kept == 7"))  # type: ignore[attr-defined]
            assert after["status"] == "ok", after
        print(f"stop during `while True: pass` ({runs} runs): median {statistics.median(stops) * 1000:.0f} ms, "
              f"worst {max(stops) * 1000:.0f} ms to the cell's end, namespace kept "
              "(target <= 1 s)")
    finally:
        kc.stop_channels()  # type: ignore[attr-defined]
        km.shutdown_kernel(now=True)  # type: ignore[attr-defined]


def processes_in(folder: Path) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(os.readlink(f"/proc/{pid}/cwd")) == folder.resolve():
                found.append(int(pid))
        except OSError:
            continue
    return found


def bench_kill(workspace: Path, environ: dict[str, str]) -> None:
    km, kc = lily_kernel(workspace, environ)
    code = ("/python import subprocess\n"
            "for _ in range(3):\n"
            "    subprocess.Popen(['sleep', '600'], start_new_session=True)")
    assert reply_to(kc, kc.execute(code))["status"] == "ok"  # type: ignore[attr-defined]
    before = processes_in(workspace)
    os.kill(km.provisioner.pid, signal.SIGKILL)  # type: ignore[attr-defined]
    time.sleep(2)
    after = processes_in(workspace)
    kc.stop_channels()  # type: ignore[attr-defined]
    print(f"kill -9 of the Lily kernel: {len(before)} processes working in the workspace "
          f"before, {len(after)} alive 2 s later (target: 0)")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    if not find_sandbox(os.environ).available:
        print(f"no sandbox here: {find_sandbox(os.environ).reason}")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        environ = bench_env(Path(tmp) / "home")
        asyncio.run(bench_start(workspace, environ, args.runs))
        asyncio.run(bench_overhead(workspace, environ, args.calls))
        bench_stop(workspace, environ, max(1, args.runs // 2))
        bench_kill(workspace, environ)
    return 0


if __name__ == "__main__":
    sys.exit(main())
