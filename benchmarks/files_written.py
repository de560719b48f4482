"""Benchmark: what finding the files a run wrote costs (execution/written.py): one look
at a workspace of 10,000 files in 100 folders (and 3,000 files in a `.git` it leaves
out), and the comparison of two looks; every run takes two looks.

    .venv/bin/python benchmarks/files_written.py [--runs 20] [--files 10000]

Medians of `--runs`, the minimum and the maximum beside them (a loaded machine spreads
them), in a fresh temporary folder.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lily_kernel.execution.written import take_snapshot, written_files


def _workspace(root: Path, files: int) -> None:
    folders = max(1, files // 100)
    for folder in range(folders):
        (root / f"d{folder:04}").mkdir()
        for number in range(files // folders):
            (root / f"d{folder:04}" / f"f{number:03}.txt").write_text("x" * number)
    (root / ".git").mkdir()
    for number in range(3000):
        (root / ".git" / f"o{number}").write_text("y")


def _times(action: object, runs: int) -> list[float]:
    spent = []
    for _ in range(runs):
        began = time.perf_counter()
        action()  # type: ignore[operator]
        spent.append((time.perf_counter() - began) * 1000)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--files", type=int, default=10_000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        _workspace(root, options.files)
        snapshot = take_snapshot(root)
        looks = _times(lambda: take_snapshot(root), options.runs)
        compares = _times(lambda: written_files(snapshot, snapshot), options.runs)
    print(f"{len(snapshot.files):,} files seen (complete: {snapshot.complete})")
    for name, spent in (("one look", looks), ("a comparison", compares)):
        print(f"{name}: median {statistics.median(spent):.1f} ms "
              f"(min {min(spent):.1f}, max {max(spent):.1f})")
    print(f"a run's cost: about {2 * statistics.median(looks) + statistics.median(compares):.0f} ms")


if __name__ == "__main__":
    main()
