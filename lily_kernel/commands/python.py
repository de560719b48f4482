"""`/python`: the person's own code in the session's Python kernel, the one the model's
`python` tool runs in (no model involved).

`/python <code>` (the rest of the cell, as written) runs the code through the one tool
gate as the person's call: shown and recorded as the model's runs are, its outputs in
the cell; the cell fails when the code raised. `/python` alone says whether a kernel
runs, which one, and the names it holds; `/python restart` ends it (the next run starts
a new one, its variables gone).
"""

from __future__ import annotations

import ast
import textwrap
from typing import TYPE_CHECKING

from lily_kernel.commands.registry import CommandContext, CommandOutcome, CommandSpec
from lily_kernel.commands.results import CommandResult, RestartPython, RunPython
from lily_kernel.display import Fields, Text
from lily_kernel.errors import CommandError, LilyError

if TYPE_CHECKING:
    from lily_kernel.execution.python_host import PythonHost
    from lily_kernel.tools import ToolOutcome

__all__ = ["looks_like_python", "python_command", "python_ran"]

RESTART = "restart"
PYTHON_KERNEL = "python_kernel"  # the configuration key that chooses the kernel
MAX_NAMES = 60  # names listed by `/python`; the rest counted
# What makes a chat cell plainly Python: a statement or a call. A bare name or a number
# ("hello", "42") parses too, and is a message.
_PLAINLY_PYTHON = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef,
                   ast.ClassDef, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For,
                   ast.While, ast.With, ast.Try, ast.Call)


def looks_like_python(text: str) -> bool:
    """Whether a chat cell is plainly Python (`import math` / `print(math.sqrt(2))`):
    it parses as Python and holds a statement or a call. Such a cell still goes to the
    model; the person is told `/python` runs it."""
    if not text.strip():
        return False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):  # (ValueError: a NUL in the text)
        return False
    return any(isinstance(node, _PLAINLY_PYTHON) for node in ast.walk(tree))


def _code(raw: str) -> str:
    """The code of `/python <code>`: on the command's own line, or on the lines below
    it (dedented together)."""
    first, _, rest = raw.partition("\n")
    if first.strip():
        return (first.strip() + "\n" + rest).rstrip()
    return textwrap.dedent(rest).strip("\n").rstrip()


def _host(ctx: CommandContext) -> PythonHost:
    if ctx.python is None:
        raise CommandError("/python: Python cannot run here.")
    return ctx.python()


async def _status(ctx: CommandContext) -> CommandResult:
    host = _host(ctx)
    try:
        kernel = host.choice().described()
    except LilyError as exc:
        kernel = f"none: {exc}"
    running = host.running
    names = await host.names() if running is not None else None
    if running is None:
        state = "not running (the first /python or python call starts it)"
    else:
        state = "running" + (f" (started in {running.started_ms / 1000:.1f} s)"
                             if running.started_ms is not None else "")
    # A python_kernel the workspace's lily.yaml names waits for the folder's trust
    # (trust/settings.py writes each held setting's line from its key).
    held = [line for line in ctx.workspace.held_settings
            if line.startswith(f"{PYTHON_KERNEL}: ")]
    box = host.sandbox()
    items = [("Kernel", kernel),
             *(("Held", f"lily.yaml's {line}, until you trust this folder: `/trust`")
               for line in held),
             ("State", state),
             ("Sandbox", "bubblewrap" if box.available else f"none ({box.reason}): "
              "Python does not run"),
             ("Time limit", f"{host.timeout:g} s per run")]
    if names is not None:
        shown = ", ".join(names[:MAX_NAMES]) or "nothing yet"
        more = f" and {len(names) - MAX_NAMES} more" if len(names) > MAX_NAMES else ""
        items.append(("Holds", shown + more))
    return CommandResult("python", "Python", (
        Fields(tuple(items)),
        Text("`/python <code>` runs code in it; `/python restart` ends it (its variables "
             "are gone; the next run starts a new one)."),
    ))


async def _python(ctx: CommandContext, raw: str) -> CommandOutcome:
    code = _code(raw)
    if not code:
        return CommandOutcome(await _status(ctx))
    if code == RESTART:  # the runtime ends the kernel (the intent)
        was = _host(ctx).running is not None
        return CommandOutcome(CommandResult("python", "Python", (Text(
            "The Python kernel ended; the next run starts a new one." if was else
            "No Python kernel was running; the next run starts one."),),
            intent=RestartPython()))
    if not ctx.in_cell:
        raise CommandError("/python runs code in a notebook cell only.")
    return CommandOutcome(CommandResult("python", intent=RunPython(code)))


def python_ran(outcome: ToolOutcome) -> CommandResult:
    """`/python <code>`'s result once the runtime ran it through the gate (the `RunPython`
    intent); CommandError when the code raised, was stopped or did not run."""
    from lily_kernel.tools.python import python_reply  # loaded with the python tool

    reply = python_reply(outcome)  # how the run ended (None: no code ran)
    if reply is None:
        raise CommandError(f"/python: {outcome.detail}")
    if reply.status == "error":
        raise CommandError(f"/python: the code raised {reply.error}.")
    from lily_kernel.prompting.runs import kernel_status, stopped_reason

    if stopped_reason(reply):  # stopped early: why, and what became of the kernel
        raise CommandError(f"/python: {kernel_status(reply)}.")
    return CommandResult("python")  # its outputs are in the cell


def python_command() -> CommandSpec:
    return CommandSpec("python", "run Python in the session's sandboxed kernel (the model's "
                       "`python` tool's); alone: the kernel and what it holds; `restart`: "
                       "a new kernel", _python, usage="/python [code | restart]", raw=True)
