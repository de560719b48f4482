"""A step repeated on a thread of its own while a block runs: an attacker swapping a
path, the stop button pressed again and again, a sampler counting processes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def repeating(step: Callable[[], None], pause: float = 0.0) -> Iterator[None]:
    """`step` run again and again (`pause` seconds before each) on a daemon thread while
    inside; the thread is joined on the way out, so no step runs after the block."""
    done = threading.Event()

    def run() -> None:
        while not done.wait(pause):
            step()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
