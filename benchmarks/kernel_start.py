"""Benchmark: Lily kernel start -> kernel_info reply -> first `/skills` reply, 1,000 skills.

    .venv/bin/python benchmarks/kernel_start.py [--runs 9] [--skills 1000]

Measured against ipykernel's python3 kernel start -> kernel_info reply, in the same run,
the two kernels alternating. Median over --runs. Target: ratio <= 1.0x.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_common import bench_env, generate_workspace, median, started  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--skills", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = generate_workspace(Path(tmp), args.skills)
        env = bench_env(Path(tmp) / "home")
        lily, python = [], []
        for run in range(args.runs + 1):  # run 0 warms the page cache and .pyc files
            began = time.perf_counter()
            with started("lily", workspace, env) as kernel:
                kernel.execute("/skills")
                lily_seconds = time.perf_counter() - began
            with started("python3", workspace, env) as kernel:
                python_seconds = kernel.ready_after
            if run:
                lily.append(lily_seconds)
                python.append(python_seconds)
    lily_s, python_s = median(lily), median(python)
    print(f"lily: start -> kernel_info -> first /skills ({args.skills} skills): "
          f"{lily_s * 1000:.0f} ms (median of {args.runs})")
    print(f"python3: start -> kernel_info: {python_s * 1000:.0f} ms")
    print(f"ratio: {lily_s / python_s:.2f}x (target <= 1.0x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
