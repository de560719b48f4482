"""The kernel benchmarks still run (tiny sizes): their figures are in docs/benchmarks.md.

No timing is asserted here (speed is measured by the scripts, not by tests); each script
must finish and print every figure it is documented to print.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from lily_kernel.llm.local_files import find_embedded_model
from tests.kernel.conftest import REPO

BENCHMARKS = REPO / "benchmarks"


def run_benchmark(script: str, *args: str, timeout: float = 300) -> str:
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize(("script", "args", "expected"), [
    ("kernel_start.py", ("--runs", "1", "--skills", "3"),
     ["kernel ready (wait_for_ready): lily start", "kernel_info reply: lily start",
      "python3 start -> ready -> first 1+1 reply",
      "ratio", "the do-nothing kernel"]),
    ("kernel_roundtrip.py", ("--runs", "3", "--skills", "3"), ["ratio"]),
    ("kernel_memory.py", ("--runs", "1", "--skills", "3"),
     ["lily: idle RSS with 3 skills", "python3: idle RSS", "ratio"]),
])
def test_kernel_benchmark_prints_its_ratio(script: str, args: tuple[str, ...],
                                           expected: list[str]) -> None:
    out = run_benchmark(script, *args)
    for text in expected:
        assert text in out


@pytest.mark.parametrize(("script", "args", "expected"), [
    ("mcp_serve.py", ("--runs", "1", "--calls", "5", "--skills", "5"),
     ["workspace: 5 skills, 5 served by skills/list", "ratio lily mcp / lily skills --json",
      "over in-process"]),
    ("mcp_tools.py", ("--calls", "5"), ["the SDK's client, directly", "over the SDK"]),
    ("mcp_start.py", ("--runs", "1", "--skills", "5"),
     ["served by skills/list: lily mcp 5, the floor 5", "ratio lily mcp / minimal server",
      "ratio lily mcp / bare server"]),
])
def test_mcp_benchmarks_print_their_figures(script: str, args: tuple[str, ...],
                                            expected: list[str]) -> None:
    out = run_benchmark(script, *args)
    for text in expected:
        assert text in out


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads /proc (Linux)")
def test_start_breakdown_reports_every_stage_of_both_kernels() -> None:
    # The script itself fails unless /skills succeeded with every generated skill loaded.
    out = run_benchmark("kernel_start_breakdown.py", "--runs", "1", "--skills", "3")
    # Three reports: Lily, python3, Lily with the GC paused.
    assert out.count("  ipykernel.kernelapp (both kernels) ") == 3
    for stage in ("Lily's modules", "session start (config, persona, skills)",
                  "/skills result and its three renderings"):
        assert out.count(f"  {stage} ") == 2
    assert "  yaml " not in out  # off the start path (skills/plain_frontmatter.py)
    for stage in ("ipykernel.debugger (debugpy)", "its IPython shell"):
        assert out.count(f"  {stage} ") == 1
    assert out.count("  total ") == 3


@pytest.mark.skipif(find_embedded_model() is None,
                    reason="the `local` extra is not installed (./setup.sh installs it)")
def test_local_model_benchmark_prints_every_figure_and_its_ratio() -> None:
    # Four kernels, each loading the embedded model and answering, on a 2-core machine
    # the suite keeps busy: one llama.cpp thread (two wait for each other at every step
    # when the cores are taken: several times slower) and decode rates over 32 tokens.
    # Each stop is pressed when the cell says the model works, whatever the load, and
    # must be measured: a number, not "not measured".
    out = run_benchmark("local_model.py", "--skills", "3", "--threads", "1",
                        "--decode-tokens", "32", timeout=900)
    for workspace in ("== quickstart", "== 3 skills"):
        assert workspace in out
    for figure in ("turn 1 first token", "turn 2 first token", "turn 1 first token, seen before",
                   "stop during prompt evaluation", "stop during generation",
                   "kernel RSS after load (MiB)", "raw first token (baseline)",
                   "prompt tokens/s", "decode tokens/s", "first token, Lily / raw llama-cpp",
                   "decode, Lily / eval alone"):
        measured = re.findall(rf"^  {re.escape(figure)} +\d+\.\d\d(?: s|x)?$", out, re.M)
        assert len(measured) == 2, (figure, out)
    assert len(re.findall(r"^  skill selected in turns 1 and 2 +\S", out, re.M)) == 2, out


def test_python_execution_benchmark_prints_every_goal() -> None:
    import os

    from lily_kernel.execution.sandbox import find_sandbox

    if not find_sandbox(os.environ).available and os.environ.get("CI") != "true":
        pytest.skip(find_sandbox(os.environ).reason)
    out = run_benchmark("python_execution.py", "--runs", "1", "--calls", "3")
    for figure in ("start -> ready -> first empty run: plain jupyter_client ",
                   "python call (3 calls): raw execute_interactive ",
                   "stop during `while True: pass` (1 runs): median ",
                   "kill -9 of the Lily kernel: "):
        assert figure in out, out
    assert "0 alive 2 s later" in out
