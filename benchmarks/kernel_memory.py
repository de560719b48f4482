"""Benchmark: idle memory (RSS) of a Lily kernel with 1,000 skills vs the python3 kernel.

    .venv/bin/python benchmarks/kernel_memory.py [--runs 5] [--skills 1000]

Each kernel is started, runs one cell (Lily: `/skills`; python3: `1+1`), and is left
idle for a second before its resident set size is read (psutil). The two kernels
alternate, run by run; medians over --runs, and the median of each run's ratio.
Goal (issues 28 and 35): ratio <= 0.95x.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_common import bench_env, generate_workspace, median, started


def idle_rss(kernel_name: str, code: str, workspace: Path, env: dict[str, str]) -> float:
    with started(kernel_name, workspace, env) as kernel:
        kernel.execute(code)
        time.sleep(1.0)
        return float(psutil.Process(kernel.pid).memory_info().rss) / 2**20


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skills", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = generate_workspace(Path(tmp), args.skills)
        env = bench_env(Path(tmp) / "home")
        pairs = [(idle_rss("lily", "/skills", workspace, env),
                  idle_rss("python3", "1+1", workspace, env)) for _ in range(args.runs)]
    lily = median([pair[0] for pair in pairs])
    python = median([pair[1] for pair in pairs])
    ratios = [lily_rss / python_rss for lily_rss, python_rss in pairs]
    print(f"lily: idle RSS with {args.skills} skills: {lily:.1f} MiB (median of {args.runs})")
    print(f"python3: idle RSS: {python:.1f} MiB")
    print(f"ratio: {lily / python:.3f}x; run by run: median {median(ratios):.3f}x, "
          f"min {min(ratios):.3f}x, max {max(ratios):.3f}x (goal <= 0.95x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
