"""What the embedded-model tests share (tests/llm/test_local_model.py, in this process;
tests/llm/test_kernel_local_model.py and test_kernel_local_model_alone.py, in kernels):
the skip when the `local` extra is missing, the bounds, and readers of a chat cell.

The model runs on ONE thread here (LILY_LOCAL_THREADS=1, `threads=1` in this process),
as docs/benchmarks.md advises where several processes keep the cores busy: the suite
runs two workers beside mypy on 2 cores, and llama.cpp's two threads wait for each other
at every step, so two fell to a seventh of one's speed under such load (one answer of
80 tokens, its llama-cpp-python twin and 85 tokens more, one run after the other at load
11 and rising: 34 s on one thread, 245 s on two). The default (as many threads as
cores, at most 4) is still what test_the_offline_model_gets_391_from_code_it_saw_run and
the quickstart (tests/kernel/test_notebooks.py) run with: the thread count changes the
sums, so the answers (on one thread the quickstart's haiku repeats a line of an earlier
answer, which that test checks no answer does).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from lily_kernel.llm.local_files import find_embedded_model
from tests.kernel.conftest import REPO, Execution, LilyProcess

EMBEDDED = find_embedded_model()
# How long one cell of the real model may take before the test fails: a bound for a
# failure (a passing cell returns when it ends), kept at load 8 and beyond on 2 cores.
ANSWER_SECONDS = 300
NEEDS_THE_MODEL = pytest.mark.skipif(
    EMBEDDED is None, reason="the `local` extra is not installed (./setup.sh installs it)")
# The network guard, then the checkout under test (a worktree's own code too).
GUARD = os.pathsep.join((str(REPO / "tests" / "support" / "guard_network"), str(REPO)))
NAME = "SmolLM2-135M-Instruct (local)"
ONE_THREAD = {"LILY_LOCAL_THREADS": "1"}


def notices(run: Execution) -> list[str]:
    return [d["text/plain"] for d in run.displays if "lily-notice" in d.get("text/html", "")]


def answer(run: Execution) -> dict[str, str]:
    """The reply's final content: the last update of its display (or the display)."""
    updates = run.of_type("update_display_data")
    if updates:
        data: dict[str, str] = updates[-1]["data"]
        return data
    return [d for d in run.displays if "lily-reply" in d.get("text/html", "")][-1]


def session_events(kernel: LilyProcess) -> list[dict[str, Any]]:
    """The kernel's event log (none before its first chat turn)."""
    logs = list((kernel.workspace / ".lily" / "sessions").glob("*.jsonl"))
    assert len(logs) <= 1, logs
    return [json.loads(line) for log in logs for line in log.read_text().splitlines()]
