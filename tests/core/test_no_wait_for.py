"""The stop button must never be lost. On Python 3.11 (the oldest Lily runs on),
`asyncio.wait_for` returns its awaitable's result and drops a cancellation that arrives as
that awaitable completes: a stop pressed as a command starts or ends went unheard
(tests/core/test_shell_session.py shows one). Lily bounds waits with `asyncio.timeout`."""

from __future__ import annotations

import ast
from pathlib import Path

import lily_kernel

PACKAGE = Path(lily_kernel.__file__).parent


def wait_for_calls(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "wait_for"
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "asyncio"):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_wait_is_bounded_by_asyncio_wait_for() -> None:
    assert wait_for_calls(PACKAGE) == []


def test_the_scan_sees_a_wait_for(tmp_path: Path) -> None:
    (tmp_path / "x.py").write_text("import asyncio\n\n\nasync def f(x):\n"
                                   "    await asyncio.wait_for(x, 1)\n")
    assert wait_for_calls(tmp_path) == ["x.py:5"]
