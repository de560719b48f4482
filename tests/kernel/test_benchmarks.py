"""The kernel benchmarks still run (tiny sizes): their figures are in docs/benchmarks.md.

No timing is asserted here (speed is measured by the scripts, not by tests); each script
must finish and print every figure it is documented to print.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.kernel.conftest import REPO

BENCHMARKS = REPO / "benchmarks"


def run_benchmark(script: str, *args: str) -> str:
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize(("script", "args", "expected"), [
    ("kernel_start.py", ("--runs", "1", "--skills", "3"),
     ["kernel ready (wait_for_ready): lily start", "kernel_info reply: lily start"]),
    ("kernel_roundtrip.py", ("--runs", "3", "--skills", "3"), ["ratio"]),
    ("kernel_memory.py", ("--runs", "1", "--skills", "3"),
     ["lily: idle RSS with 3 skills", "python3: idle RSS", "ratio"]),
])
def test_kernel_benchmark_prints_its_ratio(script: str, args: tuple[str, ...],
                                           expected: list[str]) -> None:
    out = run_benchmark(script, *args)
    for text in expected:
        assert text in out


def test_start_breakdown_reports_every_stage_of_both_kernels() -> None:
    out = run_benchmark("kernel_start_breakdown.py", "--runs", "1", "--skills", "3")
    for stage in ("ipykernel.kernelapp (both kernels)", "pydantic, up to BaseModel",
                  "session start (config, persona, skills)",
                  "/skills result and its three renderings",
                  "ipykernel.debugger (debugpy)", "its IPython shell"):
        assert stage in out
    assert out.count("  total ") == 3  # Lily, python3, Lily with the GC paused
    assert "3 skills in the workspace" in out
