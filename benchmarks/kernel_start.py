"""Benchmark, the user's clock: from starting a kernel to its first cell's result.

    .venv/bin/python benchmarks/kernel_start.py [--runs 15] [--skills 1000]

Lily: start -> ready -> `/skills` over 1,000 workspace skills -> its execute_reply.
python3 (ipykernel's own kernel): start -> ready -> `1+1` -> its execute_reply. Same
run, the kernels alternating; medians over --runs. Target: ratio <= 0.9x.

A third kernel is timed the same way for reference: benchmarks/noop_kernel.py, an
ipykernel kernel that does nothing (no shell, no debugger, no workspace). It is the
floor of any kernel built on ipykernel's IPKernelApp: what the shared imports, the
sockets and the client's connection cost before a kernel's own work.

Two clocks are printed. "ready" is jupyter_client's own notion (`wait_for_ready`: the
kernel_info reply, then 0.2 s of silence on iopub, which is what `start_new_kernel`,
nbclient and JupyterLab's kernel manager wait for); "reply" stops at the kernel_info
reply itself. The first `/skills` is timed to its execute_reply.

Goal (issue 35): Lily <= 1.05x the do-nothing kernel, as the median of each run's ratio
(the kernels of one run are started one after the other, so a run's ratio holds when the
shared machine's speed drifts between runs).

    .venv/bin/python benchmarks/kernel_start.py --instructions [--runs 1]

counts instructions instead (valgrind's callgrind; the load does not move them): Lily and
the do-nothing kernel, start -> kernel_info reply -> first cell's reply, and their ratio
(benchmarks/kernel_instructions.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_common import (
    bench_env,
    generate_workspace,
    median,
    noop_kernelspecs,
    reply_to,
    started,
)
from kernel_instructions import run as count_instructions


def first_cell(kernel_client: object, code: str, began: float) -> float:
    """Seconds from `began` to the execute_reply of `code`, the kernel's first cell."""
    kc = kernel_client
    reply = reply_to(kc, kc.execute(code))  # type: ignore[arg-type, attr-defined]
    assert reply["content"]["status"] == "ok", reply["content"]
    return time.perf_counter() - began


def _with_bytecode(env: dict[str, str]) -> dict[str, str]:
    """`env` letting Python write its .pyc files (a shell or test runner may forbid it:
    PYTHONDONTWRITEBYTECODE), so that the first, uncounted run compiles what changed and
    the measured ones load it, as an installed kernel does: a module compiled at every
    start would be counted as the kernel's work."""
    return {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under callgrind instead of timing")
    args = parser.parse_args()
    if args.instructions:
        with tempfile.TemporaryDirectory() as tmp:
            count_instructions(args.runs, generate_workspace(Path(tmp), args.skills),
                               _with_bytecode(bench_env(Path(tmp) / "home")), Path(tmp),
                               noop_kernelspecs(Path(tmp)))
        return 0
    kernels = {"lily": "/skills", "python3": "1+1", "noop": "1+1"}
    results: dict[tuple[str, str], list[float]] = {}
    over_noop: dict[str, list[float]] = {}  # lily / noop, run by run
    load_before = os.getloadavg()[0]  # the times (not the ratios) follow the machine's load
    with tempfile.TemporaryDirectory() as tmp:
        workspace = generate_workspace(Path(tmp), args.skills)
        env = _with_bytecode(bench_env(Path(tmp) / "home"))
        specs = noop_kernelspecs(Path(tmp))
        for run in range(args.runs + 1):  # run 0 warms the page cache and .pyc files
            for flush in (True, False):
                key = "ready" if flush else "reply"
                for name, code in kernels.items():
                    began = time.perf_counter()
                    with started(name, workspace, env, flush=flush, specs=specs) as kernel:
                        took = first_cell(kernel.kc, code, began)
                    if run:
                        results.setdefault((name, key), []).append(took)
                if run:
                    over_noop.setdefault(key, []).append(results["lily", key][-1]
                                                         / results["noop", key][-1])
    print(f"{args.skills} skills in the workspace, medians of {args.runs} runs; load average "
          f"{load_before:.1f} -> {os.getloadavg()[0]:.1f}")
    for key, label in (("ready", "kernel ready (wait_for_ready)"),
                       ("reply", "kernel_info reply")):
        lily, python, noop = (median(results[name, key]) for name in kernels)
        print(f"{label}: lily start -> {key} -> first /skills reply {lily * 1000:.0f} ms; "
              f"python3 start -> {key} -> first 1+1 reply {python * 1000:.0f} ms; "
              f"ratio {lily / python:.2f}x (target <= 0.9x); the do-nothing kernel "
              f"{noop * 1000:.0f} ms, {noop / python:.2f}x python3")
        pairs = over_noop[key]
        print(f"  lily / the do-nothing kernel, run by run ({key}): median "
              f"{median(pairs):.3f}x, min {min(pairs):.3f}x, max {max(pairs):.3f}x "
              "(goal <= 1.05x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
