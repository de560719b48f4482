"""LilyKernel: Jupyter messages in, Lily's runtime does the work, Jupyter messages out.

One kernel is one session, started with the kernel in its workspace (the kernel's
working directory, i.e. the notebook's folder, or `LILY_WORKSPACE`). If the session
cannot start (a broken lily.yaml, an unreadable skills root), the kernel stays up and
every cell reports why, trying again each time, so fixing the file is enough.

The session starts in a background thread when the kernel starts: loading Lily and the
skills then overlaps the client's connection to the kernel instead of delaying it, and
the first request that needs the session waits for it.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipykernel._version import kernel_protocol_version
from ipykernel.kernelbase import Kernel

from lily_kernel import __version__
from lily_kernel.errors import LilyError
from lily_kernel.kernel.history import CellHistory
from lily_kernel.kernel.interrupt import cancel_on_sigint
from lily_kernel.kernel.output import CellError, KernelSink, command_bundle, no_answer
from lily_kernel.kernel.stdin import request_input

if TYPE_CHECKING:
    from lily_kernel.runtime import LilyRuntime

__all__ = ["LilyKernel"]

BANNER = (
    f"Lily {__version__}: this notebook is one conversation with a skill-driven agent.\n"
    "A cell starting with / is a command (/help lists them); any other cell is a "
    "message to the model."
)


def workspace_from_environment() -> Path:
    """`LILY_WORKSPACE` if set, else the kernel's working directory."""
    return Path(os.environ.get("LILY_WORKSPACE") or os.getcwd())


class _NoSession(Exception):
    """The session could not start; carries what the cell reports."""

    def __init__(self, error: CellError) -> None:
        super().__init__(error.evalue)
        self.error = error


class LilyKernel(Kernel):
    implementation = "lily"
    implementation_version = __version__
    banner = BANNER
    language_info = {
        "name": "lily",
        "version": __version__,
        "mimetype": "text/markdown",
        "file_extension": ".md",
        "codemirror_mode": "markdown",
        "pygments_lexer": "markdown",
    }
    help_links = [  # noqa: RUF012 (a traitlets List, as in the base class)
        {"text": "Agent Skills format", "url": "https://agentskills.io/specification"},
        {"text": "Model names (LILY_MODEL)", "url": "https://docs.litellm.ai/docs/providers"},
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.workspace = workspace_from_environment()
        self.history = CellHistory()
        self.runtime: LilyRuntime | None = None
        self._start_failure: BaseException | None = None
        self._starting = self._start_in_background()

    @property
    def kernel_info(self) -> dict[str, Any]:
        # Built here, not by the base class: it advertises "debugger" whenever debugpy is
        # importable (Lily has none), and imports debugpy to find out (~40 ms, ~8 MB).
        subshells = bool(getattr(self, "_supports_kernel_subshells", False))
        return {
            "protocol_version": kernel_protocol_version,
            "implementation": self.implementation,
            "implementation_version": self.implementation_version,
            "language_info": self.language_info,
            "banner": self.banner,
            "help_links": self.help_links,
            "supported_features": ["kernel subshells"] if subshells else [],
        }

    # --- the session -------------------------------------------------------------

    def _start_session(self) -> None:
        """Start the session (in a worker thread); keep the failure if it cannot."""
        try:
            from lily_kernel.runtime import LilyRuntime

            self.runtime = LilyRuntime.start(self.workspace)
            self._start_failure = None
        except Exception as exc:  # the kernel must outlive any start failure
            self._start_failure = exc
            self.log.warning("Lily could not start its session: %s", exc)

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

    async def _session(self) -> LilyRuntime | None:
        """The session, once started; a failed start is tried again (the file may be
        fixed by now). None while it cannot start."""
        if self.runtime is not None:
            return self.runtime
        if self._starting.done():
            self._starting = self._start_in_background()
        # Shielded: an interrupted cell stops waiting, the start itself goes on.
        await asyncio.shield(asyncio.wrap_future(self._starting))
        return self.runtime

    def _start_error(self) -> CellError:
        """What each cell reports while the session cannot start."""
        failure = self._start_failure
        assert failure is not None
        if not isinstance(failure, LilyError):
            return CellError.from_bug(failure)
        message = (
            f"Error: Lily could not start this notebook's session: {failure} "
            "Fix it and run the cell again (no restart needed)."
        )
        return CellError(type(failure).__name__, message, (message,))

    # --- execute -----------------------------------------------------------------

    async def do_execute(  # type: ignore[override]
        self,
        code: str,
        silent: bool,
        store_history: bool = True,
        user_expressions: dict[str, Any] | None = None,
        allow_stdin: bool = False,
        *,
        cell_meta: dict[str, Any] | None = None,
        cell_id: str | None = None,
    ) -> dict[str, Any]:
        # Recorded as IPython's kernel does (the base class does not): whether this
        # request's frontend answers input requests (approvals ask through it).
        self._allow_stdin = allow_stdin
        if store_history and not silent:
            self.history.add(self.execution_count, code)
        error = await self._run_cell(code, silent)
        if error is None:
            return {"status": "ok", "execution_count": self.execution_count,
                    "payload": [], "user_expressions": {}}
        if not silent:
            self.send_response(self.iopub_socket, "error", error.content())
        return {"status": "error", "execution_count": self.execution_count, **error.content()}

    async def _run_cell(self, code: str, silent: bool) -> CellError | None:
        """Run the cell as a task the stop button can cancel; None when it succeeded."""
        sink = (KernelSink(self._publish, self._ask) if not silent
                else KernelSink(_discard, no_answer))
        task = asyncio.ensure_future(self._run_in_session(code, sink))
        with cancel_on_sigint(task) as interrupted:
            try:
                await task
            except asyncio.CancelledError:
                if not interrupted():
                    raise  # the kernel itself is stopping this request
                return CellError.interrupted()
            except _NoSession as exc:
                return exc.error
            except LilyError as exc:
                return CellError.from_lily(exc)
            except Exception as exc:
                self.log.error("Lily failed on a cell", exc_info=exc)
                return CellError.from_bug(exc)
        return None

    async def _run_in_session(self, code: str, sink: KernelSink) -> None:
        runtime = await self._session()
        if runtime is None:
            raise _NoSession(self._start_error())
        await runtime.run_cell(code, sink)

    async def _ask(self, prompt: str) -> str | None:
        return await request_input(self, prompt)

    def _publish(self, msg_type: str, content: dict[str, Any]) -> None:
        self.send_response(self.iopub_socket, msg_type, content)

    # --- completion, inspection, history -------------------------------------------

    async def do_complete(self, code: str, cursor_pos: int | None) -> dict[str, Any]:
        cursor = len(code) if cursor_pos is None else cursor_pos
        reply: dict[str, Any] = {"status": "ok", "matches": [], "cursor_start": cursor,
                                 "cursor_end": cursor, "metadata": {}}
        runtime = await self._session()
        if runtime is not None:
            from lily_kernel.commands import complete

            found = complete(code, cursor, runtime.session.skill_snapshot,
                             runtime.env.list_agents())
            reply.update(matches=list(found.matches), cursor_start=found.cursor_start,
                         cursor_end=found.cursor_end)
        return reply

    async def do_inspect(self, code: str, cursor_pos: int | None, detail_level: int = 0,
                         omit_sections: Any = ()) -> dict[str, Any]:
        cursor = len(code) if cursor_pos is None else cursor_pos
        result = None
        runtime = await self._session()
        if runtime is not None:
            from lily_kernel.commands import inspect

            result = inspect(code, cursor, runtime.session.skill_snapshot)
        return {"status": "ok", "found": result is not None, "metadata": {},
                "data": command_bundle(result) if result is not None else {}}

    async def do_is_complete(self, code: str) -> dict[str, Any]:
        # A cell is one message or one command, whatever its lines: always complete.
        return {"status": "complete"}

    async def do_history(  # type: ignore[override]
        self, hist_access_type: str, output: bool, raw: bool, session: int | None = None,
        start: int | None = None, stop: int | None = None, n: int | None = None,
        pattern: str | None = None, unique: bool = False, **_ignored: Any,
    ) -> dict[str, Any]:
        return self.history.reply(hist_access_type, output, session=session, start=start,
                                  stop=stop, n=n, pattern=pattern, unique=unique)

    async def do_shutdown(self, restart: bool) -> dict[str, Any]:
        if self.runtime is not None:
            self.runtime.close()
        return {"status": "ok", "restart": restart}


def _discard(msg_type: str, content: dict[str, Any]) -> None:
    """A silent execution publishes nothing."""
