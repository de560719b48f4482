"""The suite on two workers (pytest-xdist; ./test.sh runs `-n 2 --dist loadfile`: each
module on one worker, in order. `loadgroup` would spread a module's independent slow
tests, but under pytest 9 xdist 3.8.0's group suffix (`item._nodeid`) is ignored, so a
module's tests sharing one kernel ran on both workers with a kernel each).

Most slow tests wait: for a kernel's reply, a browser, a model's answer. Two workers
keep both cores busy while one waits. Under xdist:

- a slow test that uses a fixture the tests define for a module, class or the session
  (a kernel, a browser page, a model server) is in the group of its module: one worker
  runs that module's tests in order, its kernel started once; any other slow test goes
  to whichever worker is free; fast tests go by module (a test of milliseconds sent
  alone would leave a worker waiting on the controller for the next);
- the slow tests are sent first, the longest first (SLOWEST), the fast tests last: the
  two workers finish close together instead of one waiting on a long test begun at
  the end;
- each worker sends its kernel starts outside `slow` tests (tests/support/layers.py) to
  the controller, which fails the run and names them, as a run without xdist does.

Tests never share a file, port or HOME between workers: every test's HOME and tmp_path
are its own (tests/conftest.py), servers bind port 0, kernels get fresh ports.
"""

from __future__ import annotations

import inspect
import os
from typing import Any

import pytest

# The longest tests and modules, measured one module at a time at load 2-8 (2026-11-28,
# after the embedded-model, record and MCP modules were split so that both workers share
# them): test_notebooks.py (the quickstart's embedded-model run 150 s, the goldens under
# nbval), test_benchmarks.py ~285 s, the two record modules ~145 s each, the three
# embedded-model modules 87-134 s, test_runners.py 88 s, the two MCP modules ~150 s
# together; the attack reviews' daemon and TOCTOU tests 70-150 s each. A module stays on
# one worker (--dist loadfile), so the longest go first and the short ones fill the end.
# Node id prefixes, sent first in this order; what is not here still runs, after these,
# slow before fast.
SLOWEST: tuple[str, ...] = (
    "tests/kernel/test_notebooks.py::test_quickstart_runs_top_to_bottom",
    "tests/kernel/test_benchmarks.py",
    "tests/kernel/test_record.py",
    "tests/kernel/test_record_reopen.py",
    "tests/llm/test_attack_review_shell_daemon.py",
    "tests/llm/test_attack_review_script_toctou.py",
    "tests/llm/test_kernel_shell_session.py",
    "tests/llm/test_local_model.py",
    "tests/llm/test_kernel_local_model_alone.py",
    "tests/llm/test_kernel_local_model.py",
    "tests/kernel/test_runners.py",
    "tests/llm/test_kernel_mcp.py",
    "tests/llm/test_kernel_mcp_faults.py",
    "tests/llm/test_attack_review_skill_write.py",
    "tests/kernel/test_notebooks.py::test_golden_transcripts_pass_nbval",
    "tests/kernel/test_interrupt.py",
    "tests/kernel/test_golden_replay.py",
    "tests/kernel/test_startup.py",
    "tests/kernel/test_cli_run.py",
    "tests/llm/test_kernel_chat.py",
    "tests/llm/test_python_attacks.py",
)
SHARED_SCOPES = frozenset({"class", "module", "package", "session"})
_REPORT = "lily_unmarked_kernel_starts"


def in_worker() -> bool:
    return "PYTEST_XDIST_WORKER" in os.environ


def arrange(items: list[pytest.Item]) -> None:
    """In an xdist worker: group each slow module's tests and put the slow groups first
    (every worker sorts the same collection the same way, as xdist requires)."""
    if not in_worker():
        return
    for item in items:
        if item.get_closest_marker("slow") is None or shares_a_fixture(item):
            item.add_marker(pytest.mark.xdist_group(name=item.nodeid.split("::", 1)[0]))

    def order(pair: tuple[int, pytest.Item]) -> tuple[int, int, int]:
        index, item = pair
        slow = item.get_closest_marker("slow") is not None
        rank = next((i for i, prefix in enumerate(SLOWEST) if item.nodeid.startswith(prefix)),
                    len(SLOWEST))
        return (0 if slow else 1, rank, index)

    items[:] = [item for _, item in sorted(enumerate(items), key=order)]


def shares_a_fixture(item: pytest.Item) -> bool:
    """Whether the test uses a fixture of the tests' own that outlives it (its tests may
    build on each other's state: one worker runs them, in order)."""
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()):
        for fixture in (info.name2fixturedefs.get(name, ()) if info else ()):
            module = str(getattr(inspect.unwrap(fixture.func), "__module__", ""))
            if fixture.scope in SHARED_SCOPES and module.startswith("tests."):
                return True
    return False


def report_to_controller(config: pytest.Config, starts: dict[str, int]) -> None:
    """In a worker: hand its unmarked kernel starts to the controller."""
    output = getattr(config, "workeroutput", None)
    if output is not None:
        output[_REPORT] = dict(starts)


def worker_report(node: Any) -> dict[str, int]:
    """On the controller: what a worker that ended handed over."""
    output = getattr(node, "workeroutput", None) or {}
    return dict(output.get(_REPORT, {}))
