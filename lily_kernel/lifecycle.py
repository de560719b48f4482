"""A session's lifecycle, for the kernel adapter to await: background start, retry, warm-up.

It sits beside the runtime, not in it: the runtime is routing and the turn; this is how
a synchronous host (the kernel) starts one on a thread of its own and waits for it.

The session starts in a background thread as soon as the kernel is created: loading
Lily and the skills then overlaps the client's connection instead of delaying it, and
the first request that needs the session waits for it. A session that cannot start (a
broken lily.yaml, an unreadable skills root) is tried again by every later request, so
fixing the file is enough; meanwhile each cell reports why.

When a remote model is configured, the model path (litellm and the OpenAI client's chat
resources) is imported in another background thread once the session is up and no cell
is running, so the first chat cell does not pay for it. Nothing is warmed otherwise.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

from lily_kernel.errors import LilyError

if TYPE_CHECKING:
    from lily_kernel.commands import CommandResult, Completion
    from lily_kernel.runtime.runtime import LilyRuntime
    from lily_kernel.runtime.sink import CellSink

__all__ = ["WARM_UP_DELAY", "BackgroundRuntime", "workspace_from_environment"]

_log = logging.getLogger("lily_kernel")

WARM_UP_DELAY = 0.5  # seconds of quiet after the start before the model path is imported
SETTLE_DELAY = 0.5  # seconds of quiet after a cell before its freed memory is given back


def workspace_from_environment(environ: Mapping[str, str] | None = None) -> Path:
    """`LILY_WORKSPACE` if set, else the working directory (the notebook's folder)."""
    environ = os.environ if environ is None else environ
    return Path(environ.get("LILY_WORKSPACE") or os.getcwd())


def _start_failure_error(failure: LilyError) -> LilyError:
    """What each cell reports while the session cannot start: the same kind of error,
    with the message saying that a fix needs no restart."""
    message = (f"Lily could not start this notebook's session: {failure} "
               "Fix it and run the cell again (no restart needed).")
    try:
        return type(failure)(message)
    except TypeError:  # a LilyError subclass with another signature
        return LilyError(message)


class BackgroundRuntime:
    """A LilyRuntime started off the event loop, with what the kernel adapter asks of it:
    `run_cell`, `complete`, `inspect`, `close`."""

    def __init__(self, workspace: Path, start: Callable[[Path], LilyRuntime] | None = None,
                 *, warm_up: bool = True) -> None:
        self.workspace = workspace
        self.runtime: LilyRuntime | None = None
        self._start = start or _start_runtime
        self._warm_up_enabled = warm_up
        self._failure: BaseException | None = None
        self._busy = 0  # cells running now; the warm-up waits for none
        self._last_activity = time.monotonic()
        self._starting = self._start_in_background()

    # --- starting ----------------------------------------------------------------

    def _start_session(self) -> None:
        try:
            self.runtime = self._start(self.workspace)
            self._failure = None
        except Exception as exc:  # noqa: BLE001 - the kernel must outlive any start failure
            self._failure = exc
            return
        if self._warm_up_enabled and self.runtime.wants_warm_up():
            threading.Thread(target=self._warm_up, name="lily-warm-up", daemon=True).start()

    def _start_in_background(self) -> Future[None]:
        done: Future[None] = Future()

        def run() -> None:
            # While this thread loads, the kernel's own threads (shell, iopub) must get
            # the GIL back quickly to answer the client: switch every 0.5 ms, not 5 ms.
            interval = sys.getswitchinterval()
            sys.setswitchinterval(min(interval, 0.0005))
            try:
                self._start_session()
            finally:
                sys.setswitchinterval(interval)
                done.set_result(None)

        threading.Thread(target=run, name="lily-session-start", daemon=True).start()
        return done

    def wait_started(self, timeout: float | None = None) -> LilyRuntime | None:
        """Block until the current start attempt ends (for scripts and tests)."""
        self._starting.result(timeout)
        return self.runtime

    async def session(self) -> LilyRuntime | None:
        """The runtime once started; None while it cannot start. A failed start is tried
        again (the file may be fixed by now)."""
        if self.runtime is not None:
            return self.runtime
        if self._starting.done():
            self._starting = self._start_in_background()
        # Shielded: an interrupted cell stops waiting, the start itself goes on.
        await asyncio.shield(asyncio.wrap_future(self._starting))
        return self.runtime

    async def _started(self) -> LilyRuntime:
        runtime = await self.session()
        if runtime is not None:
            return runtime
        failure = self._failure
        if isinstance(failure, LilyError):
            raise _start_failure_error(failure) from failure
        assert failure is not None
        raise failure  # a bug: shown with its traceback

    # --- the model path, warmed in the background ---------------------------------

    def _warm_up(self) -> None:
        # A quiet moment first (WARM_UP_DELAY seconds in which no cell ran): the import
        # holds the GIL for seconds, and must not slow the commands of the first moments.
        while self._busy or time.monotonic() - self._last_activity < WARM_UP_DELAY:
            time.sleep(WARM_UP_DELAY / 5)
        runtime = self.runtime
        if runtime is None:
            return
        try:
            runtime.warm_up()
        except Exception:  # noqa: BLE001 - best effort: the first chat cell imports itself
            _log.warning("Lily could not warm up the model path", exc_info=True)

    # --- what the adapter asks ---------------------------------------------------------

    async def run_cell(self, code: str, sink: CellSink, cell_id: str | None = None) -> None:
        """Run one cell; while the session cannot start, raise why (a LilyError)."""
        self._busy += 1
        try:
            runtime = await self._started()
            await runtime.run_cell(code, sink, cell_id)
        finally:
            self._busy -= 1
            self._last_activity = stamp = time.monotonic()
            asyncio.get_running_loop().call_later(SETTLE_DELAY, self._settle, stamp)

    def _settle(self, stamp: float) -> None:
        """Once no cell has run for SETTLE_DELAY seconds, give back what the cells freed
        (a `/skills` of 1,000 skills leaves ~1 MiB of free heap behind); not while a
        cell runs, so no cell waits for it."""
        if not self._busy and self._last_activity == stamp:
            _give_back_memory()

    async def complete(self, code: str, cursor: int) -> Completion | None:
        runtime = await self.session()
        return runtime.complete(code, cursor) if runtime is not None else None

    async def inspect(self, code: str, cursor: int) -> CommandResult | None:
        runtime = await self.session()
        return runtime.inspect(code, cursor) if runtime is not None else None

    def close(self) -> None:
        if self.runtime is not None:
            self.runtime.close()


def _give_back_memory() -> None:
    """Collect Python's cycles, then return glibc's free pages to the system (the
    kernel's idle RSS; elsewhere than glibc only the collection)."""
    import ctypes  # with the first cell's settling, not on the kernel's start

    gc.collect()
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)


def _start_runtime(workspace: Path) -> LilyRuntime:
    from lily_kernel.runtime.runtime import LilyRuntime

    return LilyRuntime.start(workspace)
