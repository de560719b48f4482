"""The stop button around a cell's task (kernel/interrupt.py), in this process: a press
before the task exists stops it; one after it ended raises nothing. (In a real kernel:
tests/kernel/test_interrupt.py.)"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from lily_kernel.kernel.interrupt import EarlyStop, cancel_on_sigint


def _with_early_stop(body: Callable[[EarlyStop], Coroutine[Any, Any, None]]) -> None:
    """Run `body` in an event loop on this (main) thread, as the kernel handles a
    request: SIGINT taken by an armed EarlyStop, the handler before restored after."""

    async def run() -> None:
        early = EarlyStop()
        previous = early.arm()
        try:
            await body(early)
        finally:
            signal.signal(signal.SIGINT, previous)

    asyncio.run(run())


def test_a_press_before_the_cells_task_exists_stops_it_at_its_first_wait() -> None:
    steps: list[str] = []

    async def cell() -> None:
        steps.append("began")
        await asyncio.sleep(0)
        steps.append("went on")

    async def body(early: EarlyStop) -> None:
        signal.raise_signal(signal.SIGINT)  # before: KeyboardInterrupt, here
        assert early.pressed
        task = asyncio.ensure_future(cell())
        with cancel_on_sigint(task, early) as interrupted, pytest.raises(asyncio.CancelledError):
            await task
        assert interrupted()

    _with_early_stop(body)
    assert steps == ["began"]


def test_a_press_after_the_cell_ended_raises_nothing_and_stops_nothing() -> None:
    async def body(early: EarlyStop) -> None:
        task = asyncio.ensure_future(asyncio.sleep(0, result="done"))
        with cancel_on_sigint(task, early) as interrupted:
            assert await task == "done"
        signal.raise_signal(signal.SIGINT)  # before the reply is sent
        assert early.pressed
        assert not interrupted()

    _with_early_stop(body)


def test_a_press_on_an_earlier_request_is_forgotten() -> None:
    async def body(early: EarlyStop) -> None:
        signal.raise_signal(signal.SIGINT)
        early.arm()  # the next request
        task = asyncio.ensure_future(asyncio.sleep(0, result="done"))
        with cancel_on_sigint(task, early) as interrupted:
            assert await task == "done"
        assert not interrupted()

    _with_early_stop(body)
