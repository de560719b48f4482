"""The `shell` tool: one command line, run by `/bin/sh -c` in the workspace, in the sandbox.

The same run as a skill's script (execution/plan.py, execution/runner.py): bubblewrap's
file system and namespaces, the environment without secrets, the limits, the time
limit (`script_timeout`), the output cap, nothing left behind. Never outside the
sandbox: without a working bubblewrap the call is refused, saying how to get one. The
command is made ready before anyone is asked (`prepare`: a command a narrowing skill
does not allow is refused there), the person reads it whole, and each run is a
`code_run` event (the command and its digest, how it ended, the digest of its output).
The cell shows the command, its output as it comes, how it ended and the files it wrote
(tools/run_view.py); the model reads the same, and what the sandbox refused it.
Asked by default (`Tool.asked`), and in an untrusted folder whatever the policy says.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lily_kernel.display import Code
from lily_kernel.display.runs import process_ended
from lily_kernel.errors import ToolError, ToolRefusedError
from lily_kernel.execution.runner import KEPT_BYTES, ProcessPlan, RunResult, ScriptHost
from lily_kernel.tools.command_rules import command_refusal
from lily_kernel.tools.context import Question, ToolContext
from lily_kernel.tools.questions import shell_question
from lily_kernel.tools.registry import ARGS_CONFIG, Tool, ToolOutcome, ToolResult
from lily_kernel.tools.run_view import CellOutput, watch_run
from lily_kernel.visible import shown

if TYPE_CHECKING:
    from lily_kernel.events import RunStatus
    from lily_kernel.execution.shell_session import SessionOutcome, SessionSpec, ShellSessions

__all__ = ["MAX_COMMAND_CHARS", "SHELL", "ShellPlan", "plan_shell", "shell_tool"]

SHELL = "/bin/sh"
# The question shows a command whole: a longer one is refused (a script belongs in a
# file the person can read, written with `write`).
MAX_COMMAND_CHARS = 10_000


@dataclass(frozen=True, kw_only=True)
class ShellPlan(ProcessPlan):
    """A shell command's run: the command line and its sha256."""

    command: str
    sha256: str
    # The session sandbox it runs in (execution/shell_session.py); None: it runs alone.
    session: SessionSpec | None = None


def plan_shell(command: str, ctx: ToolContext, host: ScriptHost) -> ShellPlan:
    """The command checked (its size, the active skill's narrowing) and planned in the
    sandbox; ToolRefusedError without one."""
    if not command.strip():
        raise ToolError("the command is empty.")
    if "\0" in command:
        raise ToolError("the command contains a NUL character.")
    if len(command) > MAX_COMMAND_CHARS:
        raise ToolError(f"the command is {len(command):,} characters long; at most "
                        f"{MAX_COMMAND_CHARS:,} (write a longer script to a file first).")
    skill = ctx.skill
    if skill is not None and skill.commands is not None:
        why = command_refusal(command, skill.commands, skill.name)
        if why is not None:
            raise ToolRefusedError(why)
    sandbox = host.sandbox()
    if not sandbox.available:
        from lily_kernel.prompting.runs import no_sandbox_reason

        raise ToolRefusedError(no_sandbox_reason("code", sandbox.reason))
    from lily_kernel.execution.plan import plan_process  # (with the first run)
    from lily_kernel.execution.shell_session import SessionSpec

    python = host.python_environment()
    process = plan_process([SHELL, "-c", command], ctx.workspace, ctx.run_protected,
                           host.environ, sandbox, limits=host.limits,
                           allowed_env=host.allowed_env, python=python)
    session = SessionSpec.of(sandbox.bwrap, process, sandbox.way_out, ctx.run_protected,
                             [*python.shown, *filter(None, [python.installs])]
                             if python is not None else ()) \
        if process.sandboxed and sandbox.bwrap is not None else None
    return ShellPlan(command=command, sha256=hashlib.sha256(command.encode()).hexdigest(),
                     session=session, **vars(process))


@dataclass(frozen=True)
class ShellArgs:
    __pydantic_config__ = ARGS_CONFIG

    command: str
    """One command line, run by /bin/sh -c in the workspace, in the sandbox."""


async def _plan(args: ShellArgs, ctx: ToolContext) -> ShellPlan:
    import asyncio  # the conversation path only (`lily skills` builds this tool too)

    host = ctx.host()
    # Off the event loop: bubblewrap is probed once, the workspace looked at.
    return await asyncio.to_thread(plan_shell, args.command, ctx, host)


async def _prepare(args: ShellArgs, ctx: ToolContext) -> Question:
    plan = await _plan(args, ctx)
    return Question(shell_question(plan.command, str(plan.cwd)),
                    f"running the command {shown(plan.command, 80)}", subject=plan)


def _status(result: RunResult) -> RunStatus:
    if result.timed_out:
        return "timeout"
    return "ok" if result.exit_code == 0 else "error"


WORKSPACE_MARK = "{workspace}"


def output_record(result: RunResult, plan: ShellPlan) -> tuple[str, int]:
    """The sha256 and size of what the command printed, its workspace's path written as
    `{workspace}` (in what was kept of it): replay runs it in a copy elsewhere
    (replay/scratch.py), and compares these."""
    path = str(plan.cwd)
    size = result.output_bytes + result.output.count(path) * (len(WORKSPACE_MARK) - len(path))
    text = result.output.replace(path, WORKSPACE_MARK)
    return hashlib.sha256(text.encode()).hexdigest(), size


async def _run(args: ShellArgs, ctx: ToolContext) -> ToolResult:
    import asyncio

    from lily_kernel.events import CodeRun
    from lily_kernel.execution.runner import run_process
    from lily_kernel.prompting.runs import process_text

    host = ctx.host()
    prepared = ctx.prepared.subject if ctx.prepared is not None else None
    plan = prepared if isinstance(prepared, ShellPlan) else await _plan(args, ctx)
    started = CodeRun(tool="shell", caller=ctx.caller, code=plan.command, sha256=plan.sha256,
                      status="interrupted")
    # The person sees the command, then its output as it comes, then how it ended (the
    # notice `_announce` leaves) and the files it wrote.
    ctx.show(Code(plan.command, "sh"))
    watch = await watch_run(ctx)
    cell = CellOutput(ctx)
    session: SessionOutcome | None = None
    try:
        # Started here, on the event loop's thread: bubblewrap dies with that thread.
        if plan.session is not None:  # in the session's sandbox
            session = await _sessions(host).run(
                plan, plan.session, (SHELL, "-c", plan.command), host.timeout, cell)
            result = session.result
        else:
            result = await run_process(plan, host.timeout, on_output=cell)
    except asyncio.CancelledError:
        ctx.emit(started)
        raise
    cell.cut(result.output_bytes, KEPT_BYTES)
    digest, size = output_record(result, plan)
    ctx.emit(CodeRun(tool="shell", caller=ctx.caller, code=plan.command, sha256=plan.sha256,
                     status=_status(result), exit_code=result.exit_code,
                     duration_ms=result.duration_ms, output_sha256=digest, output_bytes=size))
    notes = await watch.finish(result.output, result.exit_code)
    if session is not None:
        notes = "\n".join(filter(None, [_session_notes(session, ctx), notes]))
    text = process_text(result, host.timeout)
    return ToolResult(f"{text.rstrip(chr(10))}\n{notes}" if notes else text, result)


def _sessions(host: ScriptHost) -> ShellSessions:
    """The session's shell sandbox, made with its first command (the host ends it)."""
    from lily_kernel.execution.shell_session import ShellSessions

    if not isinstance(host.shell, ShellSessions):
        host.shell = ShellSessions()
    return host.shell


def _session_notes(outcome: SessionOutcome, ctx: ToolContext) -> str:
    """What the session's sandbox did around the command, shown in the cell and worded
    for the model: started anew before it (why, what was ended), what was set aside
    after it, what it left running."""
    from lily_kernel.display import Notice
    from lily_kernel.display.sessions import left_running, sandbox_replaced
    from lily_kernel.prompting.runs import removed_note
    from lily_kernel.prompting.sessions import left_running_note, replaced_note

    notes = []
    if (gone := outcome.replaced) is not None and gone.ended:
        ended = (gone.ended.processes, gone.ended.count)
        ctx.show(Notice(sandbox_replaced(gone.why, gone.changed, *ended)))
        notes.append(replaced_note(gone.why, gone.changed, *ended))
    if outcome.removed:
        notes.append(removed_note(outcome.removed, links=True))
    if outcome.left:
        left = (outcome.left.processes, outcome.left.count)
        ctx.show(Notice(left_running(*left)))
        notes.append(left_running_note(*left))
    return "\n".join(notes)


def _announce(arguments: dict[str, Any], outcome: ToolOutcome) -> str:
    from lily_kernel.prompting.runs import process_status

    command = shown(arguments.get("command", ""), 100)
    if not isinstance(outcome.result, RunResult):  # it did not run
        return f"Shell {command}: {outcome.detail.rstrip('.')}"
    return process_ended(f"Shell {command}", process_status(outcome.result), sandboxed=True)


def shell_tool() -> Tool:
    return Tool(
        "shell",
        "Run one command line with /bin/sh in the workspace, in a sandbox: only the "
        "workspace writable, a time limit, and the network only to hosts the person "
        "allows (another host is asked about, or refused). `pip install` may be tried: a "
        "refusal says so in one line. Returns its exit code and output.",
        ShellArgs, _run, prepare=_prepare, asked=True,
        # It changes the workspace: in a folder the person does not trust, each call is
        # asked like `write`. Kept by `Bash` entries of allowed-tools (narrowed by their
        # patterns: tools/command_rules.py).
        asks_untrusted=True, kept_by=frozenset({"bash"}), announce=_announce,
    )
