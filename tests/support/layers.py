"""The suite's two layers: the fast run (`./test.sh -m "not slow"`) and the `slow` tests.

A test is `slow` when it starts a real kernel process, a sandboxed Python subkernel, a
browser, a gateway or a benchmark. tests/conftest.py marks it at collection:

- by folder: everything in tests/kernel, tests/browser and tests/gateway;
- by what it uses: the test, any fixture it requests (however indirectly) or any helper of
  the tests those call by name reaches one of STARTERS;
- by hand (`@pytest.mark.slow`) where neither shows it (a benchmark run as a subprocess,
  a runtime whose model starts the Python kernel).

A watch keeps the marks honest: every kernel or subkernel started in this process is
charged to the running test, and a test without the mark that started one fails the run,
named in the summary ("started a kernel but is not marked slow").
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.corpus import CORPUS

TESTS = Path(__file__).resolve().parent.parent
SLOW_FOLDERS = ("kernel", "browser", "gateway")
# What starts a kernel, a subkernel or a Jupyter server, by qualified name.
STARTERS = frozenset({
    "tests.kernel.conftest.lily_kernel",
    "tests.support.shell_gate.run_python",
    "tests.support.jupyter_server.JupyterServer",
    "jupyter_client.manager.start_new_kernel",
    "jupyter_client.manager.KernelManager",
    "lily_kernel.execution.python_host.PythonHost",
    "lily_kernel.execution.subkernel.Subkernel",
})
_DEPTH = 4  # helpers calling helpers: how far a test's own names are followed

_running: list[str] = [""]  # the test now being set up, run or torn down
_started: dict[str, int] = {}  # node id -> kernels started while it ran
_unwatched: list[str] = []


def is_slow(item: pytest.Item) -> bool:
    if item.get_closest_marker("slow") is not None:
        return True
    parts = Path(str(item.path)).resolve().relative_to(TESTS).parts
    if parts[0] in SLOW_FOLDERS:
        return True
    seen: set[object] = set()
    function = getattr(item, "obj", None)
    if (inspect.isfunction(function) or inspect.ismethod(function)) \
            and _reaches(function, seen, _DEPTH):
        return True
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()):
        for fixture in (info.name2fixturedefs.get(name, ()) if info else ()):
            if _reaches(fixture.func, seen, _DEPTH):
                return True
    return False


def _qualified(value: object) -> str:
    return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', '')}"


def _reaches(function: Callable[..., Any], seen: set[object], depth: int) -> bool:
    """Whether `function`, or a function of the tests it names, names a starter."""
    function = inspect.unwrap(getattr(function, "__func__", function))
    if function in seen or not inspect.isfunction(function):
        return False
    seen.add(function)
    names = function.__globals__
    for code in _codes(function.__code__):
        for name in code.co_names:
            value = names.get(name)
            if value is None:
                continue
            if _qualified(value) in STARTERS:
                return True
            if (depth and inspect.isfunction(inspect.unwrap(value))
                    and str(getattr(value, "__module__", "")).startswith("tests.")
                    and _reaches(value, seen, depth - 1)):
                return True
    return False


def _codes(code: types.CodeType) -> list[types.CodeType]:
    """`code` and the code of every function, lambda or comprehension inside it."""
    found = [code]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found.extend(_codes(const))
    return found


def watch_kernel_starts() -> None:
    """Charge every kernel launched through jupyter_client, and every subkernel Lily
    starts in this process, to the test running then."""
    from jupyter_client.provisioning.local_provisioner import LocalProvisioner

    _charge_on(LocalProvisioner, "launch_kernel")
    try:
        from lily_kernel.execution.subkernel import Subkernel
    except (ImportError, SyntaxError) as exc:  # said in the summary, never hidden
        _unwatched.append(f"lily_kernel.execution.subkernel: {exc}")
        return
    _charge_on(Subkernel, "start")


def _charge_on(owner: type, name: str) -> None:
    real = getattr(owner, name, None)
    if real is None:
        _unwatched.append(f"{owner.__module__}.{owner.__qualname__}.{name} is gone")
        return
    if getattr(real, "_charged", False):
        return

    def charge() -> None:
        _started[_running[0]] = _started.get(_running[0], 0) + 1

    if inspect.iscoroutinefunction(real):
        @functools.wraps(real)
        async def charged(*args: Any, **kwargs: Any) -> Any:
            charge()
            return await real(*args, **kwargs)
    else:
        @functools.wraps(real)
        def charged(*args: Any, **kwargs: Any) -> Any:
            charge()
            return real(*args, **kwargs)

    charged._charged = True  # type: ignore[attr-defined]
    setattr(owner, name, charged)


def now_running(item: pytest.Item) -> None:
    _running[0] = item.nodeid if item.get_closest_marker("slow") is None else ""


def unmarked_starts() -> dict[str, int]:
    return {test: count for test, count in _started.items() if test}


def add_unmarked_starts(starts: dict[str, int]) -> None:
    """Starts a pytest-xdist worker saw (tests/support/parallel.py), counted here."""
    for test, count in starts.items():
        _started[test] = _started.get(test, 0) + count


def _why(report: Any) -> str:
    """A skipped test's reason (pytest keeps it as (file, line, reason))."""
    longrepr = getattr(report, "longrepr", None)
    return str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""


def summarise(reporter: Any, config: pytest.Config) -> None:
    """Say which tests broke the layering, why some skipped, and what was left out."""
    unmarked = unmarked_starts()
    if unmarked:
        reporter.write_sep("=", "started a kernel but is not marked slow", red=True)
        for test, count in sorted(unmarked.items()):
            reporter.write_line(f"{test}: {count} kernel start(s); mark it slow "
                                "(tests/support/layers.py)")
    for gap in _unwatched:
        reporter.write_line(f"layers: kernel starts not watched: {gap}", yellow=True)
    if not CORPUS.full:  # a fresh clone without ../shared: said once
        reporter.write_line(f"layers: the corpus tests read {CORPUS.describe()}, not the "
                            "1,102-skill ../shared/corpus (not beside this clone)",
                            yellow=True)
    corpus = [r for r in reporter.stats.get("skipped", ()) if "shared/corpus" in _why(r)]
    if corpus:  # what needs the whole corpus still: said with the count
        reporter.write_line(f"layers: {len(corpus)} tests did not run: they need "
                            "../shared/corpus, which is not beside this clone", yellow=True)
    deselected = len(reporter.stats.get("deselected", ()))
    if deselected and "slow" in str(config.getoption("markexpr", "")):
        reporter.write_line(f"layers: {deselected} slow tests left out of this run "
                            "(./test.sh with no -m runs everything)")
