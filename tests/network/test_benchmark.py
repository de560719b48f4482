"""The proxy's benchmark still runs (tiny sizes) and prints every figure docs/benchmarks.md
records; no timing is asserted here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.test_scripts import sandbox_or_skip

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_network_benchmark_prints_its_figures() -> None:
    sandbox_or_skip()
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "network_proxy.py"),
                           "--samples", "2", "--megabytes", "1", "--downloads", "2"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    for figure in ("added to the connect:", "download ratio proxy / direct:",
                   "refused connection (403 with Lily's reason): median"):
        assert figure in done.stdout
