"""benchmarks/deploy_memory.py still runs (two kernels): its figures are in docs/deploy.md."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="reads /proc (Linux)")
def test_deploy_memory_benchmark_prints_every_figure() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "deploy_memory.py"), "--kernels", "2",
         "--model", "loopback"],
        check=False, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for label in ("idle after /skills", "after one chat cell (loopback model)"):
        assert f"{label}: RSS per kernel median" in done.stdout
        assert f"{label}: 2 kernels together: RSS sum" in done.stdout
    assert "PSS sum" in done.stdout
