"""LilyKernel: Jupyter messages in, Lily's runtime does the work, Jupyter messages out.

One kernel is one session, in the kernel's workspace (its working directory, i.e. the
notebook's folder, or `LILY_WORKSPACE`). The session's lifecycle (background start,
retry after a failed start, the warm-up of the model path) is the runtime's
`BackgroundRuntime`; this class only translates.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ipykernel._version import kernel_protocol_version
from ipykernel.kernelbase import Kernel
from traitlets import Float

from lily_kernel import __version__
from lily_kernel.errors import LilyError
from lily_kernel.kernel.history import CellHistory
from lily_kernel.kernel.interrupt import EarlyStop, cancel_on_sigint
from lily_kernel.kernel.output import CellError, KernelSink, Send, no_answer, redacted
from lily_kernel.kernel.stdin import request_input
from lily_kernel.lifecycle import BackgroundRuntime, workspace_from_environment

if TYPE_CHECKING:
    from lily_kernel.redaction import Redactor
    from lily_kernel.runtime.runtime import LilyRuntime

__all__ = ["LilyKernel"]

# Said by notebooks and consoles alike (`jupyter console` shows it first): no "notebook".
BANNER = (
    f"Lily {__version__}: one conversation with a skill-driven agent.\n"
    "Input starting with / is a command (/help lists them); anything else is a "
    "message to the model."
)
NO_SUBSHELLS = "Lily does not support kernel subshells: cells run one at a time."


class LilyKernel(Kernel):
    implementation = "lily"
    implementation_version = __version__
    banner = BANNER
    language_info = {  # noqa: RUF012 (a traitlets Dict, as in the base class)
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
    # Run All sends every cell at once; on a loaded machine the ones behind a failed
    # cell may arrive after it failed, and ran (ipykernel waits 0 s for them).
    stop_on_error_timeout = Float(0.5, config=True,
                                  help="Seconds after an error in which requests are aborted.")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.history = CellHistory()
        self.early_stop = EarlyStop()
        self.lily = BackgroundRuntime(workspace_from_environment(), start=_recorded_session)

    def pre_handler_hook(self) -> None:
        # ipykernel's raises KeyboardInterrupt on a press before the cell's task can be
        # cancelled, and the cell never answers: the press is kept for it (interrupt.py).
        self.saved_sigint_handler = self.early_stop.arm()

    @property
    def kernel_info(self) -> dict[str, Any]:
        # Built here, not by the base class, to advertise only what Lily does: the base
        # adds "debugger" when debugpy is importable (and imports it, ~40 ms) and
        # "kernel subshells" (concurrent cells in threads, which Lily's session is not
        # made for).
        return {
            "protocol_version": kernel_protocol_version,
            "implementation": self.implementation,
            "implementation_version": self.implementation_version,
            "language_info": self.language_info,
            "banner": self.banner,
            "help_links": self.help_links,
            "supported_features": [],
        }

    async def create_subshell_request(self, socket: Any, ident: Any, parent: Any) -> None:
        content = {"status": "error", "ename": "NotImplementedError", "evalue": NO_SUBSHELLS,
                   "traceback": [NO_SUBSHELLS]}
        if self.session is not None:
            self.session.send(socket, "create_subshell_reply", content, parent, ident)

    # --- execute -----------------------------------------------------------------

    async def do_execute(
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
        # Everything this cell shows passes one redactor: no credential reaches the person.
        redact = _redactor().data

        def publish(msg_type: str, content: dict[str, Any]) -> None:
            self.send_response(self.iopub_socket, msg_type, redacted(content, redact))

        if not store_history and not silent:
            # The count moves only for cells kept in history (the messaging spec, and
            # IPython's kernel); the base class counted this one already.
            self.execution_count -= 1
        error = await self._run_cell(code, publish if not silent else _discard,
                                     self._ask if not silent else no_answer, cell_id)
        if error is None:
            return {"status": "ok", "execution_count": self.execution_count,
                    "payload": [], "user_expressions": {}}
        content = redact(error.content())
        if not silent:
            self.send_response(self.iopub_socket, "error", content)
        return {"status": "error", "execution_count": self.execution_count, **content}

    async def _run_cell(self, code: str, publish: Send,
                        ask: Callable[[str], Awaitable[str | None]],
                        cell_id: str | None = None) -> CellError | None:
        """Run the cell as a task the stop button can cancel; None when it succeeded.
        `cell_id`: the front end's (JupyterLab's cell id, VS Code's cell URI)."""
        sink = KernelSink(publish, ask)
        task = asyncio.ensure_future(self.lily.run_cell(code, sink, cell_id))
        with cancel_on_sigint(task, self.early_stop) as interrupted:
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


    # --- completion, inspection, history -------------------------------------------

    async def do_complete(self, code: str, cursor_pos: int | None) -> dict[str, Any]:
        cursor = _clamped(code, cursor_pos)
        found = await self.lily.complete(code, cursor)
        # What each match is, with a skill's argument hint: JupyterLab shows `type`
        # beside the match.
        types = [{"start": found.cursor_start, "end": found.cursor_end, "text": match,
                  "type": kind}
                 for match, kind in zip(found.matches, found.types, strict=True)
                 ] if found and found.types else []
        return {"status": "ok",
                "metadata": {"_jupyter_types_experimental": types} if types else {},
                "matches": list(found.matches) if found else [],
                "cursor_start": found.cursor_start if found else cursor,
                "cursor_end": found.cursor_end if found else cursor}

    async def do_inspect(self, code: str, cursor_pos: int | None, detail_level: int = 0,
                         omit_sections: Any = ()) -> dict[str, Any]:
        cursor = _clamped(code, cursor_pos)
        result = await self.lily.inspect(code, cursor)
        from lily_kernel.display import bundle  # (Shift-Tab: not on the start path)

        data = bundle(result) if result is not None else {}
        return {"status": "ok", "found": result is not None, "metadata": {},
                "data": _redactor().data(data)}

    async def do_is_complete(self, code: str) -> dict[str, Any]:
        # A cell is one message or one command, whatever its lines: always complete.
        return {"status": "complete"}

    async def do_history(
        self, hist_access_type: str, output: bool, raw: bool, session: int | None = None,
        start: int | None = None, stop: int | None = None, n: int | None = None,
        pattern: str | None = None, unique: bool = False, **_ignored: Any,
    ) -> dict[str, Any]:
        return self.history.reply(hist_access_type, output, session=session, start=start,
                                  stop=stop, n=n, pattern=pattern, unique=unique)

    async def do_shutdown(self, restart: bool) -> dict[str, Any]:
        self.lily.close()
        return {"status": "ok", "restart": restart}

    async def _ask(self, prompt: str) -> str | None:
        """A question to the person (an approval), through the stdin channel; redacted
        like everything else the person sees."""
        return await request_input(self, _redactor()(prompt))


def _recorded_session(workspace: Path) -> LilyRuntime:
    """The notebook's session, its turns recorded and answered from the record (Run
    All after a restart, docs/sessions.md); imported in the session's start thread."""
    from lily_kernel.runtime.collaborators import RECORDED
    from lily_kernel.runtime.runtime import LilyRuntime

    return LilyRuntime.start(workspace, collaborators=RECORDED)


def _clamped(code: str, cursor_pos: int | None) -> int:
    """The cursor inside the code (its end when not given): a front end may send any
    number."""
    return len(code) if cursor_pos is None else min(max(cursor_pos, 0), len(code))


def _redactor() -> Redactor:
    """Hides the credentials of this moment's environment (built per request, so a
    key set while the kernel runs is hidden too)."""
    # Its patterns compile as it loads: in the session's start thread (the runtime
    # imports it), not on the main thread before the kernel listens.
    from lily_kernel.redaction import Redactor, secret_values

    return Redactor(secret_values())


def _discard(msg_type: str, content: dict[str, Any]) -> None:
    """A silent execution publishes nothing."""
