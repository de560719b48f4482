"""Benchmark: round trip of a tool_dispatch command (`/ls`) on a warm Lily kernel.

    .venv/bin/python benchmarks/kernel_roundtrip.py [--runs 200] [--skills 1000]

Request sent -> execute_reply received -> kernel idle again, measured against the
python3 kernel executing `1+1`, in the same run. Median over --runs after a warm-up.
Target: ratio <= 1.5x.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_common import Kernel, bench_env, generate_workspace, median, started


def round_trips(kernel: Kernel, code: str, runs: int) -> list[float]:
    for _ in range(20):  # warm-up
        kernel.execute(code)
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        kernel.execute(code)
        times.append(time.perf_counter() - began)
    return times


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--skills", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = generate_workspace(Path(tmp), args.skills)
        env = bench_env(Path(tmp) / "home")
        with started("lily", workspace, env) as lily_kernel, \
                started("python3", workspace, env) as python_kernel:
            lily = median(round_trips(lily_kernel, "/ls", args.runs))
            python = median(round_trips(python_kernel, "1+1", args.runs))
    print(f"lily: /ls round trip ({args.skills} skills in the workspace): "
          f"{lily * 1000:.2f} ms (median of {args.runs})")
    print(f"python3: 1+1 round trip: {python * 1000:.2f} ms")
    print(f"ratio: {lily / python:.2f}x (target <= 1.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
