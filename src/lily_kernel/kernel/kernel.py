"""LilyKernel: Jupyter messages in, Lily's runtime does the work, Jupyter messages out.

One kernel is one session, started with the kernel in its workspace (the kernel's
working directory, i.e. the notebook's folder, or `LILY_WORKSPACE`). If the session
cannot start (a broken lily.yaml, an unreadable skills root), the kernel stays up and
every cell reports why, trying again each time, so fixing the file is enough.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from ipykernel.kernelbase import Kernel

from lily_kernel import __version__
from lily_kernel.commands import complete, inspect
from lily_kernel.errors import LilyError
from lily_kernel.kernel.history import CellHistory
from lily_kernel.kernel.interrupt import cancel_on_sigint
from lily_kernel.kernel.output import CellError, KernelSink, command_bundle
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
        self._start_session()

    @property
    def kernel_info(self) -> dict[str, Any]:
        info = dict(super().kernel_info)
        # The base class advertises "debugger" whenever debugpy is importable.
        info["supported_features"] = [
            f for f in info["supported_features"] if f != "debugger"
        ]
        return info

    # --- the session -------------------------------------------------------------

    def _start_session(self) -> LilyRuntime | None:
        try:
            self.runtime = LilyRuntime.start(self.workspace)
            self._start_failure = None
        except Exception as exc:  # the kernel must outlive any start failure
            self._start_failure = exc
            self.log.warning("Lily could not start its session: %s", exc)
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
        sink = KernelSink(self._publish if not silent else _discard)
        runtime = self.runtime if self.runtime is not None else self._start_session()
        if runtime is None:
            return self._start_error()
        try:
            task = asyncio.ensure_future(runtime.run_cell(code, sink))
            with cancel_on_sigint(task) as interrupted:
                try:
                    await task
                except asyncio.CancelledError:
                    if not interrupted():
                        raise  # the kernel itself is stopping this request
                    return CellError.interrupted()
        except LilyError as exc:
            return CellError.from_lily(exc)
        except Exception as exc:
            self.log.error("Lily failed on a cell", exc_info=exc)
            return CellError.from_bug(exc)
        return None

    def _publish(self, msg_type: str, content: dict[str, Any]) -> None:
        self.send_response(self.iopub_socket, msg_type, content)

    # --- completion, inspection, history -------------------------------------------

    async def do_complete(self, code: str, cursor_pos: int | None) -> dict[str, Any]:
        cursor = len(code) if cursor_pos is None else cursor_pos
        reply: dict[str, Any] = {"status": "ok", "matches": [], "cursor_start": cursor,
                                 "cursor_end": cursor, "metadata": {}}
        runtime = self.runtime
        if runtime is not None:
            found = complete(code, cursor, runtime.session.skill_snapshot,
                             runtime.env.list_agents())
            reply.update(matches=list(found.matches), cursor_start=found.cursor_start,
                         cursor_end=found.cursor_end)
        return reply

    async def do_inspect(self, code: str, cursor_pos: int | None, detail_level: int = 0,
                         omit_sections: Any = ()) -> dict[str, Any]:
        cursor = len(code) if cursor_pos is None else cursor_pos
        result = None
        if self.runtime is not None:
            result = inspect(code, cursor, self.runtime.session.skill_snapshot)
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
