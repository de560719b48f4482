"""A model's tool call (other than load_skill): the policy gate, the person's approval
where the policy says `ask`, and the active skill's own tools with their events.

`read_skill_file` reads inside the active skill's folder and records a
`skill_file_read` event (path, sha256); `run_skill_script` plans the run, asks when
the policy says so, runs it (interruptible) and records a `skill_script_run` event.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lily_kernel.errors import ToolError
from lily_kernel.runtime.approval import (
    Approval,
    ask_person,
    script_question,
    tool_question,
)
from lily_kernel.skills import Skill
from lily_kernel.tools import ActiveSkill, ToolContext, ToolOutcome, run_checked
from lily_kernel.tools.policy import check_call
from lily_kernel.tools.scripts import (
    RUN_SKILL_SCRIPT,
    ScriptPlan,
    ScriptResult,
    plan_script,
)
from lily_kernel.tools.skill_files import READ_SKILL_FILE, active_skill, read_skill_file

if TYPE_CHECKING:
    from lily_kernel.runtime.runtime import CellSink, LilyRuntime

__all__ = ["run_model_tool", "skill_context"]

NO_ANSWER = (
    "{what} needs the person's approval (tools.ask in lily.yaml), and no one can answer "
    "here: this notebook runs without input requests (nbclient, papermill, `lily run`, "
    "or a frontend without stdin). To allow it without asking, name {tool} in "
    "tools.allow instead."
)


def skill_context(base: ToolContext, skill: Skill | None) -> ToolContext:
    """The tool context with the active skill's folder (whichever root it came from)."""
    if skill is None:
        return base
    return replace(base, skill=ActiveSkill(skill.name, Path(skill.path).parent))


def _refusal(approval: Approval, what: str, tool: str) -> str:
    if approval.outcome == "unanswerable":
        return NO_ANSWER.format(what=what, tool=tool)
    return f"the person declined: {what} was not run"


async def _approve(runtime: LilyRuntime, sink: CellSink, tool: str, question: str) -> Approval:
    try:
        approval = await ask_person(sink, question)
    except asyncio.CancelledError:
        # Logged too: replay must stop this cell at this question, not answer it with
        # a later cell's answer.
        runtime.log.emit("approval", tool=tool, question=question, outcome="interrupted")
        raise
    runtime.log.emit("approval", tool=tool, question=question, outcome=approval.outcome)
    return approval


def _script_event(plan: ScriptPlan, **outcome: Any) -> dict[str, Any]:
    return {"skill": plan.skill, "script": plan.script, "sha256": plan.sha256,
            "arguments": list(plan.arguments), "sandboxed": plan.sandboxed, **outcome}


async def _run_script(runtime: LilyRuntime, sink: CellSink, ctx: ToolContext, script: str,
                      arguments: tuple[str, ...], ask: bool) -> ToolOutcome:
    # Off the event loop (hashing the script, probing bubblewrap once): the kernel
    # stays responsive and interruptible.
    plan = await asyncio.to_thread(lambda: plan_script(
        active_skill(ctx), script, arguments, ctx, runtime.env.host.environ,
        runtime.sandbox()))
    what = f"{plan.script} of skill '{plan.skill}'"
    if ask:
        approval = await _approve(runtime, sink, RUN_SKILL_SCRIPT, script_question(plan))
        if not approval.approved:
            return ToolOutcome.refused(
                RUN_SKILL_SCRIPT, _refusal(approval, f"running {what}", RUN_SKILL_SCRIPT))
    timeout = runtime.env.config.script_timeout
    try:
        result: ScriptResult = await runtime.script_runner(plan, timeout)
    except asyncio.CancelledError:
        runtime.log.emit("skill_script_run", **_script_event(plan, outcome="interrupted"))
        raise
    runtime.log.emit("skill_script_run", **_script_event(
        plan, outcome="timeout" if result.timed_out else "ran", exit_code=result.exit_code,
        duration_ms=result.duration_ms, output_bytes=result.output_bytes,
        output=result.output))
    return ToolOutcome(RUN_SKILL_SCRIPT, allowed=True, output=result.for_model(timeout))


async def run_model_tool(runtime: LilyRuntime, sink: CellSink, name: str,
                         arguments: dict[str, Any], offered: list[str],
                         skill: Skill | None) -> ToolOutcome:
    """Run one call the model made; refusals and failures come back as outcomes."""
    env = runtime.env
    checked = check_call(env.registry, env.policy, name, arguments, "model", offered)
    if isinstance(checked, ToolOutcome):
        return checked
    tool, args = checked
    ctx = skill_context(env.tool_context, skill)
    ask = env.policy.decision(name) == "ask"
    try:
        if name == RUN_SKILL_SCRIPT:
            return await _run_script(runtime, sink, ctx, args.script, args.args, ask)
        if ask:
            approval = await _approve(runtime, sink, name, tool_question(name, arguments))
            if not approval.approved:
                return ToolOutcome.refused(
                    name, _refusal(approval, f"the call of '{name}'", name))
        if name == READ_SKILL_FILE:
            found = await asyncio.to_thread(read_skill_file, active_skill(ctx), args.path)
            runtime.log.emit("skill_file_read", skill=found.skill, path=found.path,
                             sha256=found.sha256, size=found.size)
            return ToolOutcome(name, allowed=True, output=found.text)
    except ToolError as exc:
        return ToolOutcome.failed(name, exc)
    # Off the event loop: a tool does file-system work (a large read, a slow disk), and
    # the kernel must stay responsive (and interruptible) meanwhile.
    return await asyncio.to_thread(run_checked, tool, args, ctx)
