"""Runtime: route a cell to the command layer or the conversation, and log events.

Names are loaded on first use (PEP 562): the kernel's lifecycle (lily_kernel/lifecycle.py)
loads the runtime in its background thread, not on the main one.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lily_kernel.runtime.runtime import LilyRuntime
    from lily_kernel.runtime.sink import CellSink

__all__ = ["CellSink", "LilyRuntime"]

_HOMES = {
    "CellSink": "sink",
    "LilyRuntime": "runtime",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'lily_kernel.runtime' has no attribute {name!r}")
    return getattr(importlib.import_module(f"lily_kernel.runtime.{_HOMES[name]}"), name)
