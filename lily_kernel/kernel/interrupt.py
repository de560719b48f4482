"""Turn the stop button (SIGINT) into the cancellation of the running cell's task.

On ipykernel 7, SIGINT raises KeyboardInterrupt wherever the main thread is; while a
cell awaits, that is inside the event loop, and the kernel process dies. For the
duration of a cell, this handler cancels the cell's task instead, as IPython's kernel
does in `_cancel_on_sigint`.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["cancel_on_sigint"]


@contextmanager
def cancel_on_sigint(task: asyncio.Future[Any]) -> Iterator[Callable[[], bool]]:
    """While inside, SIGINT cancels `task`; yields a function telling whether it did."""
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
    try:
        yield lambda: interrupted
    finally:
        signal.signal(signal.SIGINT, previous)
