"""The layers' watch holds on two workers as on one: a kernel started by a test that is
not marked slow fails the run and is named (tests/support/layers.py, parallel.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

PROBE = "tests/support/probe_unmarked_start.py"
TWO_WORKERS = ("-n", "2", "--dist", "loadfile", "--no-loadscope-reorder")


@pytest.mark.slow  # pytest runs of their own
@pytest.mark.parametrize("workers", [(), TWO_WORKERS], ids=["one-process", "two-workers"])
def test_an_unmarked_kernel_start_fails_the_run_and_is_named(workers: tuple[str, ...]) -> None:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *workers, PROBE], cwd=REPO, capture_output=True, text=True,
                          timeout=600, check=False)
    assert "2 passed" in done.stdout, done.stdout[-2000:]
    assert done.returncode == 1, done.stdout[-2000:]
    assert "started a kernel but is not marked slow" in done.stdout
    assert (f"{PROBE}::test_starts_a_kernel_without_the_slow_mark: 1 kernel start(s)"
            in done.stdout), done.stdout[-2000:]
