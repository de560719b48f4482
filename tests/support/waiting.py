"""Waiting for something to happen, by its condition, never by a fixed sleep.

A test that sleeps for "long enough" passes on a quiet machine and fails on a loaded one;
these poll the condition itself often and give up only after a generous deadline, saying
what never happened. (The deadline bounds a failure, never a success: a passing test
returns as soon as its condition holds.)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEADLINE = 60.0  # seconds: what a loaded 2-core machine may need, not what it usually does
_POLL = 0.05


def wait_until(condition: Callable[[], T], what: str, timeout: float = DEADLINE) -> T:
    """Poll `condition` until it returns something true and return that; fail, naming
    `what`, once `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not so after {timeout:g} s")
        time.sleep(_POLL)
    return value


async def until(condition: Callable[[], T], what: str, timeout: float = DEADLINE) -> T:
    """`wait_until` inside an event loop (the loop runs while it waits)."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not so after {timeout:g} s")
        await asyncio.sleep(_POLL / 5)
    return value
