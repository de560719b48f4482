"""Invoking a skill from a `/` cell: `/skill <name>`, and what `/skill:<name>`, `/<alias>`
and `/<skill-name>` resolve to (commands/resolve.py decides which skill a name is), each
with the person's request after it.

A skill invocation hands the runtime an intent (`SkillInvocation` for the model,
`ToolDispatch` for a tool), not a prompt and not a tool run.
"""

from __future__ import annotations

from lily_kernel.commands.registry import CommandContext, CommandOutcome
from lily_kernel.commands.results import CommandResult, SkillInvocation, ToolDispatch
from lily_kernel.errors import CommandError
from lily_kernel.skills import Skill, SkillSnapshot

__all__ = ["invoke_skill", "missing_skill", "skill_command"]


def missing_skill(snapshot: SkillSnapshot, name: str) -> CommandError:
    """No available skill by that name: say why when the snapshot knows it."""
    diag = snapshot.excluded_reason(name)
    if diag is not None:
        return CommandError(
            f"skill '{name}' is not available in this session (snapshot "
            f"{snapshot.version}): {diag.kind.value}: {diag.reason}.")
    return CommandError(
        f"no skill named '{name}' in this session (snapshot {snapshot.version}).")


def invoke_skill(ctx: CommandContext, command: str, skill: Skill, request: str) -> CommandOutcome:
    """Force `skill`: hand the runtime the intent to run its tool with the request (no
    model), or to ask the model with the skill forced (prompting fills its arguments)."""
    if not skill.user_invocable:
        raise CommandError(f"skill '{skill.name}' is for the model only (user-invocable: "
                           "false); no / command invokes it.")
    if skill.invocation_mode == "tool_dispatch":
        tool = ctx.workspace.registry.get(skill.command_tool or "")
        if tool is None or tool.text_argument is None:
            raise CommandError(
                f"skill '{skill.name}': tool '{skill.command_tool}' cannot take a "
                "text request.")
        dispatch = ToolDispatch(skill.name, tool.name, {tool.text_argument: request})
        return CommandOutcome(CommandResult(command, skill=skill.name, intent=dispatch))
    return CommandOutcome(CommandResult(command, skill=skill.name,
                                        intent=SkillInvocation(skill.name, request)))


async def skill_command(ctx: CommandContext, argument: str) -> CommandOutcome:
    """`/skill <name> [request]`: the first word, and the rest (same line or following
    lines)."""
    parts = argument.split(maxsplit=1)
    name, request = (parts[0], parts[1]) if len(parts) == 2 else (argument, "")
    if not name:
        raise CommandError("/skill requires a skill name.")
    snap = ctx.session.skill_snapshot
    skill = snap.get(name)
    if skill is None:
        raise missing_skill(snap, name)
    return invoke_skill(ctx, "skill", skill, request.strip())
