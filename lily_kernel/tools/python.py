"""The `python` tool: run code in the session's Python kernel, inside the sandbox.

The person sees the code (highlighted), then its outputs as they come, made safe
(display/runs.py); the model reads them as text (prompting/runs.py words it): what was
printed, the value of the last expression, a line for each image or page shown to the
person, the error's short traceback; capped, and redacted by the gate. The outcome
carries the run's `RunReply` beside that text: how it ended is read there. The kernel
(execution/python_host.py) keeps its variables across turns and cells; `/python` runs the
person's own code in it.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lily_kernel.display import Code, RunOutput
from lily_kernel.errors import ToolError
from lily_kernel.execution.runner import MAX_OUTPUT_CHARS
from lily_kernel.tools.context import Question, ToolContext
from lily_kernel.tools.questions import code_refusal, python_question
from lily_kernel.tools.registry import ARGS_CONFIG, Tool, ToolOutcome, ToolResult
from lily_kernel.tools.run_view import watch_run

if TYPE_CHECKING:  # the kernel's machinery loads with the first run, not `lily skills`
    from lily_kernel.execution.python_host import PythonHost
    from lily_kernel.execution.subkernel import RunReply

__all__ = ["PYTHON", "python_reply", "python_tool"]

PYTHON = "python"


@dataclass(frozen=True)
class PythonArgs:
    __pydantic_config__ = ARGS_CONFIG

    code: str
    """Python code (IPython syntax) to run in the session's kernel."""


def _host(ctx: ToolContext) -> PythonHost:
    python = ctx.services.python if ctx.services is not None else None
    if python is None:
        raise ToolError("Python cannot run here.")
    return python


def python_reply(outcome: ToolOutcome) -> RunReply | None:
    """The reply of the run behind an outcome of `python` (None: no code ran)."""
    if outcome.result is None:
        return None
    from lily_kernel.execution.subkernel import RunReply  # loaded: the code ran

    return outcome.result if isinstance(outcome.result, RunReply) else None


async def _prepare(args: PythonArgs, ctx: ToolContext) -> Question:
    import asyncio

    choice = await asyncio.to_thread(_host(ctx).check)
    return Question(python_question(args.code, choice.described(), ctx.workspace),
                    "running Python code in the sandbox", subject=args.code,
                    unshowable=code_refusal(args.code))


async def _run(args: PythonArgs, ctx: ToolContext) -> ToolResult:
    import asyncio

    from lily_kernel.events import CodeRun
    from lily_kernel.prompting.runs import kernel_text

    host = _host(ctx)
    code = args.code
    ctx.show(Code(code))
    stopped = CodeRun(tool=PYTHON, caller=ctx.caller, code=code,
                      sha256=hashlib.sha256(code.encode()).hexdigest(), status="interrupted")
    watch = await watch_run(ctx)
    try:
        reply = await host.run(code, lambda output: ctx.show(RunOutput(output)))
    except asyncio.CancelledError:
        ctx.emit(stopped)
        raise
    if reply.dropped:
        ctx.show(RunOutput({"output_type": "stream", "name": "stderr", "text": (
            f"[... {reply.dropped:,} more outputs not shown: {reply.output_bytes:,} bytes "
            "in all]\n")}))
    ran = dataclasses.replace(
        stopped, status=reply.status, error=reply.error, duration_ms=reply.duration_ms,
        output_sha256=reply.output_sha256, output_bytes=reply.output_bytes)
    ctx.emit(ran)
    # The files it wrote, shown and named; what the sandbox refused it (tools/run_view.py).
    notes = await watch.finish(reply.error or "", None)
    text = kernel_text(reply, MAX_OUTPUT_CHARS)
    return ToolResult(f"{text}\n{notes}" if notes else text, reply,
                      failed=reply.status == "error")


def _announce(arguments: dict[str, Any], outcome: ToolOutcome) -> str | None:
    """The code and its outputs are in the cell already: a notice only when it did not
    run, or ran past its time limit."""
    from lily_kernel.prompting.runs import kernel_status, stopped_reason

    reply = python_reply(outcome)
    if reply is not None:  # it ran: stopped early, why and what became of the kernel
        return f"Tool python: {kernel_status(reply)}" if stopped_reason(reply) else None
    return f"Tool python: {outcome.detail.rstrip('.')}"


def python_tool() -> Tool:
    return Tool(
        PYTHON,
        "Run Python code in this session's own Python kernel (IPython). Variables, imports "
        "and functions persist between calls. It runs in a sandbox: only the workspace "
        "(the working directory) is writable, and the network reaches only hosts the "
        "person allows (another host is asked about, or refused). `%pip install` may be "
        "tried: a refusal says so in one line. Returns what it printed, the value "
        "of the last expression and any error; images and HTML it displays are shown to "
        "the person.",
        PythonArgs, _run, asked=True,
        # Kept by a `Bash` of any command (skills/fields.py ANY_COMMAND), not by one
        # narrowed to some commands: Python would run what those patterns leave out.
        kept_by=frozenset({"python", "bash(*)"}),
        prepare=_prepare, asks_untrusted=True, announce=_announce,
    )
