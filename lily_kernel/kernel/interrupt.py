"""Turn the stop button (SIGINT) into the cancellation of the running cell's task.

On ipykernel 7, SIGINT raises KeyboardInterrupt wherever the main thread is; while a
cell awaits, that is inside the event loop, and the kernel process dies. For the
duration of a cell, this handler cancels the cell's task instead, as IPython's kernel
does in `_cancel_on_sigint`.

Around the cell, while the kernel takes up the request and until it has replied,
ipykernel's own hook puts `default_int_handler` in place: a press there raised
KeyboardInterrupt in the request's handler, which ipykernel catches and logs, and the
cell never answered (nor was its task stopped: a loaded machine widens that moment to
many milliseconds). `EarlyStop` takes that moment instead: a press is kept for the cell.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["EarlyStop", "cancel_on_sigint"]


class EarlyStop:
    """The stop button while the kernel handles a request outside a cell's task (before
    the task exists, after it ended): remembered, never raised."""

    def __init__(self) -> None:
        self.pressed = False

    def arm(self) -> Any:
        """For one request (main thread): earlier presses forgotten, new ones kept.
        Returns the handler it replaced (ipykernel restores it after the request)."""
        self.pressed = False
        return signal.signal(signal.SIGINT, self._press)

    def _press(self, signum: int, frame: FrameType | None) -> None:
        self.pressed = True


@contextmanager
def cancel_on_sigint(task: asyncio.Future[Any],
                     early: EarlyStop | None = None) -> Iterator[Callable[[], bool]]:
    """While inside, SIGINT cancels `task`; yields a function telling whether it did.
    A press `early` kept (before the task existed) cancels it as one pressed now."""
    interrupted = False
    if threading.current_thread() is not threading.main_thread():
        # Signal handlers can only be set from the main thread (subshells run elsewhere).
        yield lambda: interrupted
        return
    loop = asyncio.get_running_loop()

    def handle_sigint(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupted
        interrupted = True
        # The handler runs between two bytecodes of the loop itself: only schedule.
        loop.call_soon_threadsafe(task.cancel)

    previous = signal.signal(signal.SIGINT, handle_sigint)
    if early is not None and early.pressed:  # read after the swap: no press falls between
        interrupted = True
        loop.call_soon(task.cancel)  # after the task's first step, as a press now would be
    try:
        yield lambda: interrupted
    finally:
        signal.signal(signal.SIGINT, previous)
