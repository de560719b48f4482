"""The `python` tool: run code in the session's Python kernel, inside the sandbox.

The person sees the code (highlighted), then its outputs as they come, made safe
(display/runs.py); the model reads them as text: what was printed, the value of the
last expression, a line for each image or page shown to the person, the error's short
traceback; capped, and redacted by the gate. The kernel (execution/python_host.py) keeps
its variables across turns and cells; `/python` runs the person's own code in it.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lily_kernel.display import Code, RunOutput
from lily_kernel.display.runs import error_text
from lily_kernel.errors import ToolError
from lily_kernel.execution.runner import MAX_OUTPUT_CHARS
from lily_kernel.tools.context import Question, ToolContext
from lily_kernel.tools.questions import code_refusal, python_question
from lily_kernel.tools.registry import ARGS_CONFIG, Tool, ToolOutcome

if TYPE_CHECKING:  # the kernel's machinery loads with the first run, not `lily skills`
    from lily_kernel.execution.python_host import PythonHost
    from lily_kernel.execution.subkernel import RunReply

__all__ = ["PYTHON", "model_text", "python_tool"]

PYTHON = "python"


@dataclass(frozen=True)
class PythonArgs:
    __pydantic_config__ = ARGS_CONFIG

    code: str
    """Python code (IPython syntax) to run in the session's kernel."""


def _host(ctx: ToolContext) -> PythonHost:
    if ctx.python is None:
        raise ToolError("Python cannot run here.")
    return ctx.python


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _said(output: Mapping[str, Any]) -> str:
    """What the model reads of one output."""
    kind = output.get("output_type")
    if kind == "stream":
        return _text(output.get("text", ""))
    if kind == "error":
        return error_text(output) + "\n"
    data = output.get("data") or {}
    shown = [m for m in data if m != "text/plain"]
    lines = [_text(data["text/plain"])] if "text/plain" in data else []
    if shown:
        lines.append(f"[shown to the person: {', '.join(sorted(shown))}]")
    return "\n".join(lines) + "\n"


def model_text(reply: RunReply) -> str:
    """A run as the model reads it: how it ended, then its outputs, capped."""
    if reply.stopped:
        head = f"[stopped: {reply.stopped}]"
    elif reply.status == "error":
        head = f"[error: {reply.error}]"
    else:
        head = "[ran]"
    body = "".join(_said(o) for o in reply.outputs).rstrip("\n") or "(no output)"
    if len(body) > MAX_OUTPUT_CHARS:
        body = body[:MAX_OUTPUT_CHARS] + f"\n[... output truncated: {len(body):,} characters]"
    if reply.dropped:
        body += f"\n[... {reply.dropped:,} more outputs not kept ({reply.output_bytes:,} bytes in all)]"
    return f"{head}\n{body}"


async def _prepare(args: PythonArgs, ctx: ToolContext) -> Question:
    import asyncio

    choice = await asyncio.to_thread(_host(ctx).check)
    return Question(python_question(args.code, choice.described(), ctx.workspace),
                    "running Python code in the sandbox", subject=args.code,
                    unshowable=code_refusal(args.code))


async def _run(args: PythonArgs, ctx: ToolContext) -> str:
    import asyncio

    from lily_kernel.events import CodeRun

    host = _host(ctx)
    code = args.code
    ctx.show(Code(code))
    stopped = CodeRun(tool=PYTHON, caller=ctx.caller, code=code,
                      sha256=hashlib.sha256(code.encode()).hexdigest(), status="interrupted")
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
    text = model_text(reply)
    if reply.status == "error":
        raise ToolError(text)
    return text


def _announce(arguments: dict[str, Any], outcome: ToolOutcome) -> str | None:
    """The code and its outputs are in the cell already: a notice only when it did not
    run, or ran past its time limit."""
    if outcome.status == "ran":  # stopped early: why, and what became of the kernel
        stopped = outcome.text.partition("\n")[0].strip("[]")
        return f"Tool python: {stopped}" if stopped.startswith("stopped") else None
    if outcome.status == "failed" and outcome.text.startswith("[error"):
        return None  # the traceback is shown
    return f"Tool python: {outcome.detail.rstrip('.')}"


def python_tool() -> Tool:
    return Tool(
        PYTHON,
        "Run Python code in this session's own Python kernel (IPython). Variables, imports "
        "and functions persist between calls. It runs in a sandbox: no network, only the "
        "workspace (the working directory) is writable. Returns what it printed, the value "
        "of the last expression and any error; images and HTML it displays are shown to "
        "the person.",
        PythonArgs, _run, asked=True,
        # Kept by a `Bash` of any command (skills/fields.py ANY_COMMAND), not by one
        # narrowed to some commands: Python would run what those patterns leave out.
        kept_by=frozenset({"python", "bash(*)"}),
        prepare=_prepare, asks_untrusted=True, announce=_announce,
    )
