"""The `run_skill_script` tool: run a file from the active skill's `scripts/`.

`plan_script` decides everything before anything runs (which file, which interpreter,
the environment without secrets, the bubblewrap sandbox when the machine has a working
one, its file system planned by execution/mounts.py); the person is asked about that plan
where the policy says `ask`; the run itself is the session's `ScriptHost`
(execution/runner.py), and each run is a `skill_script_run` event.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lily_kernel.display import Code
from lily_kernel.display.runs import process_ended
from lily_kernel.errors import ToolError, ToolRefusedError
from lily_kernel.execution.limits import Limits
from lily_kernel.execution.runner import KEPT_BYTES, ScriptPlan
from lily_kernel.tools.context import ActiveSkill, Question, ToolContext
from lily_kernel.tools.files import short_path
from lily_kernel.tools.questions import script_question
from lily_kernel.tools.registry import ARGS_CONFIG, Tool, ToolOutcome, ToolResult
from lily_kernel.tools.run_view import CellOutput, watch_run
from lily_kernel.tools.skill_files import active_skill, resolve_in_skill
from lily_kernel.visible import shown

if TYPE_CHECKING:  # the sandbox's machinery loads with the first run, not at the start
    from lily_kernel.execution.installs import RunEnvironment
    from lily_kernel.execution.sandbox import Sandbox

__all__ = ["RUN_SKILL_SCRIPT", "plan_script", "run_skill_script_tool"]

RUN_SKILL_SCRIPT = "run_skill_script"
MAX_ARGS = 64
# Shells by extension; Python runs with the kernel's own interpreter, JavaScript with node.
_SHELLS = {".sh": "sh", ".bash": "bash", ".zsh": "zsh"}
_NODE = (".js", ".mjs", ".cjs")


def _interpreter(path: Path, relative: str, environ: Mapping[str, str],
                 python: str = sys.executable) -> list[str]:
    """The command that runs `path`: by extension, else by its `#!` line (`python`: the
    session's Python, the kernel's)."""
    from lily_kernel.execution.sandbox import search_path

    search = search_path(environ)
    suffix = path.suffix.lower()
    if suffix == ".py":
        return [python]
    if suffix in _SHELLS:
        shell = shutil.which(_SHELLS[suffix], path=search) or (
            "/bin/sh" if suffix == ".sh" else None)
        if shell is None:
            raise ToolError(f"'{relative}' needs {_SHELLS[suffix]}, which is not installed.")
        return [shell]
    if suffix in _NODE:
        node = shutil.which("node", path=search)
        if node is None:
            raise ToolError(f"'{relative}' needs node (Node.js), which is not installed.")
        return [node]
    try:
        with open(path, "rb") as handle:
            first = handle.readline(256).decode("utf-8", "replace").strip()
    except OSError as exc:
        raise ToolError(f"cannot read '{relative}': {exc.strerror}.") from None
    if not first.startswith("#!"):
        raise ToolError(f"cannot tell how to run '{relative}': no known extension (.py, .sh, "
                        ".bash, .js) and no #! line.")
    words = first[2:].split()
    if words and Path(words[0]).name == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    if not words:
        raise ToolError(f"'{relative}' has an empty #! line.")
    name = Path(words[0]).name
    if name.startswith("python"):
        return [python, *words[1:]]
    found = shutil.which(words[0], path=search) if "/" not in words[0] else words[0]
    if found is None or not os.path.exists(found):
        raise ToolError(f"'{relative}' needs {words[0]}, which is not installed.")
    return [found, *words[1:]]


def plan_script(skill: ActiveSkill, script: str, arguments: Sequence[str], ctx: ToolContext,
                environ: Mapping[str, str], sandbox: Sandbox,
                allowed_env: Sequence[str] = (), limits: Limits | None = None,
                python: RunEnvironment | None = None) -> ScriptPlan:
    """Resolve the script inside the skill's `scripts/` and build its command line
    (sandboxed where bubblewrap works, under `limits`: execution/plan.py; a Python
    script with the session's Python, `python`, where there is one)."""
    target, relative = resolve_in_skill(skill, script)
    if not relative.startswith("scripts/"):
        raise ToolError(f"'{short_path(script)}' is not in the skill's scripts/ folder; "
                        "only files there can be run.")
    if not target.is_file():
        raise ToolError(f"no script '{relative}' in the skill '{skill.name}'.")
    if len(arguments) > MAX_ARGS:
        raise ToolError(f"too many arguments ({len(arguments)}; at most {MAX_ARGS}).")
    if any("\0" in arg for arg in arguments):
        raise ToolError("an argument contains a NUL character.")
    try:
        digest = hashlib.sha256(target.read_bytes()).hexdigest()
    except OSError as exc:
        raise ToolError(f"cannot read '{relative}': {exc.strerror}.") from None
    interpreter = str(python.python) if python is not None else sys.executable
    command = [*_interpreter(target, relative, environ, interpreter), str(target),
               *arguments]
    from lily_kernel.execution.plan import plan_process

    process = plan_process(command, ctx.workspace, ctx.run_protected, environ, sandbox,
                           limits=limits or Limits(), allowed_env=allowed_env,
                           visible=[skill.folder.resolve(),
                                    Path(command[0]).resolve().parent.parent],
                           python=python)
    return ScriptPlan(skill=skill.name, script=relative, sha256=digest,
                      arguments=tuple(arguments), **vars(process))


@dataclass(frozen=True)
class RunSkillScriptArgs:
    __pydantic_config__ = ARGS_CONFIG

    script: str
    """Path of the script relative to the active skill's folder, e.g. scripts/fill.py."""
    args: tuple[str, ...] = ()
    """Command-line arguments, one string each."""


def _still_planned(plan: ScriptPlan, ctx: ToolContext) -> None:
    """Between the question and the run, neither the skill nor the script changed: what
    runs is what the person was shown (its sha256)."""
    skill = active_skill(ctx)
    target, _ = resolve_in_skill(skill, plan.script)
    try:
        digest = hashlib.sha256(target.read_bytes()).hexdigest()
    except OSError as exc:
        raise ToolError(f"cannot read '{plan.script}': {exc.strerror}.") from None
    if digest != plan.sha256:
        raise ToolRefusedError(f"'{plan.script}' changed after it was planned (sha256 "
                               f"{digest[:12]}…, planned {plan.sha256[:12]}…); not run")


async def _plan(args: RunSkillScriptArgs, ctx: ToolContext) -> ScriptPlan:
    host = ctx.host()
    # Off the event loop (hashing the script, probing bubblewrap once): the kernel
    # stays responsive and interruptible.
    import asyncio  # on the conversation path only (`lily skills` builds this tool too)

    return await asyncio.to_thread(lambda: plan_script(
        active_skill(ctx), args.script, args.args, ctx, host.environ, host.sandbox(),
        host.allowed_env, host.limits, host.python_environment()))


async def _prepare(args: RunSkillScriptArgs, ctx: ToolContext) -> Question:
    plan = await _plan(args, ctx)
    return Question(script_question(plan), f"running {plan.script} of skill '{plan.skill}'",
                    subject=plan)


async def _run(args: RunSkillScriptArgs, ctx: ToolContext) -> ToolResult:
    import asyncio  # on the conversation path only (`lily skills` builds this tool too)

    from lily_kernel.events import SkillScriptRun
    from lily_kernel.prompting.runs import process_text

    host = ctx.host()
    # The plan made before the call (its script's sha256 included), which the person
    # approved where they were asked.
    prepared = ctx.prepared.subject if ctx.prepared is not None else None
    plan = prepared if isinstance(prepared, ScriptPlan) else await _plan(args, ctx)
    await asyncio.to_thread(_still_planned, plan, ctx)
    stopped = SkillScriptRun(skill=plan.skill, script=plan.script, sha256=plan.sha256,
                             arguments=list(plan.arguments), sandboxed=plan.sandboxed,
                             outcome="interrupted")
    # The person sees what runs, its output as it comes, how it ended (`_announce`) and
    # the files it wrote (tools/run_view.py).
    ctx.show(Code(shlex.join([plan.script, *plan.arguments]), "sh"))
    # A recorded run (replay's) runs nothing: its output, as recorded, holds its notes.
    watch = await watch_run(ctx) if host.live else None
    cell = CellOutput(ctx)
    try:
        result = await host.run_shown(plan, cell)
    except asyncio.CancelledError:
        ctx.emit(stopped)
        raise
    cell.cut(result.output_bytes, KEPT_BYTES)
    if watch is not None and (notes := await watch.finish(result.output, result.exit_code)):
        # Kept with the output in the event, so a replay that runs nothing reads them too.
        result = dataclasses.replace(result, output=f"{result.output.rstrip(chr(10))}\n{notes}")
    ran = dataclasses.replace(
        stopped, outcome="timeout" if result.timed_out else "ran", exit_code=result.exit_code,
        duration_ms=result.duration_ms, output_bytes=result.output_bytes, output=result.output)
    ctx.emit(ran)
    return ToolResult(process_text(result, host.timeout), result)


def _announce(arguments: dict[str, Any], outcome: ToolOutcome) -> str:
    from lily_kernel.execution.runner import RunResult
    from lily_kernel.prompting.runs import process_status

    script = f"Script {shown(str(arguments.get('script', '')), 100)}"
    if not isinstance(outcome.result, RunResult):  # it did not run
        return f"{script}: {outcome.detail.rstrip('.')}"
    return process_ended(script, process_status(outcome.result))


def run_skill_script_tool() -> Tool:
    return Tool(
        RUN_SKILL_SCRIPT,
        "Run a script from the active skill's scripts/ folder with arguments (working "
        "directory: the workspace). Returns its exit code and output.",
        RunSkillScriptArgs, _run, offered="with_skill", explicit=True,
        # Its working directory is the workspace, writable in the sandbox: in a folder the
        # person does not trust, a script may not change it unasked any more than `write`.
        kept_by=frozenset({"bash"}), prepare=_prepare, asks_untrusted=True,
        announce=_announce,
    )
