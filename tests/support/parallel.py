"""The suite on two workers (pytest-xdist; ./test.sh runs `-n 2 --dist loadgroup`).

Most slow tests wait: for a kernel's reply, a browser, a model's answer. Two workers
keep both cores busy while one waits. Under xdist:

- every slow test is in the group of its module, so one worker runs a module's tests
  in order, and a module's (or the session's) kernel, browser or model is started once;
  fast tests are not grouped and fill whichever worker is free;
- the slow groups are sent first, the longest first (SLOWEST), the fast tests last:
  the two workers finish close together instead of one waiting on a long module begun
  at the end;
- each worker sends its kernel starts outside `slow` tests (tests/support/layers.py) to
  the controller, which fails the run and names them, as a run without xdist does.

Tests never share a file, port or HOME between workers: every test's HOME and tmp_path
are its own (tests/conftest.py), servers bind port 0, kernels get fresh ports.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

# Modules measured as the longest (--durations, 2 cores): sent first, in this order.
# Any module missing here still runs (after these, slow before fast).
SLOWEST: tuple[str, ...] = ()
_REPORT = "lily_unmarked_kernel_starts"


def in_worker() -> bool:
    return "PYTEST_XDIST_WORKER" in os.environ


def arrange(items: list[pytest.Item]) -> None:
    """In an xdist worker: group each slow module's tests and put the slow groups first
    (every worker sorts the same collection the same way, as xdist requires)."""
    if not in_worker():
        return
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(pytest.mark.xdist_group(name=_module(item)))
    rank = {module: i for i, module in enumerate(SLOWEST)}

    def order(pair: tuple[int, pytest.Item]) -> tuple[int, int, int]:
        index, item = pair
        slow = item.get_closest_marker("slow") is not None
        return (0 if slow else 1, rank.get(_module(item), len(rank)), index)

    items[:] = [item for _, item in sorted(enumerate(items), key=order)]


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def report_to_controller(config: pytest.Config, starts: dict[str, int]) -> None:
    """In a worker: hand its unmarked kernel starts to the controller."""
    output = getattr(config, "workeroutput", None)
    if output is not None:
        output[_REPORT] = dict(starts)


def worker_report(node: Any) -> dict[str, int]:
    """On the controller: what a worker that ended handed over."""
    output = getattr(node, "workeroutput", None) or {}
    return dict(output.get(_REPORT, {}))
