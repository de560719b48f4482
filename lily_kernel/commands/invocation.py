"""Invoking a skill from a `/` cell: `/skill <name>`, `/skill:<name>`, `/<alias>` and
`/<skill-name>`, each with the person's request after it.

Which skill a command names is decided here, in this order: a built-in command (in
builtins.py, before anything here), then `/skill:<name>`, then an alias (`command:`),
then a skill's exact name. A skill with `user-invocable: false` answers none of them.
"""

from __future__ import annotations

from lily_kernel.commands.context import CommandContext, CommandOutcome
from lily_kernel.commands.results import CommandResult, SkillInvocation, ToolDispatch
from lily_kernel.errors import CommandError
from lily_kernel.skills import Skill, SkillSnapshot

__all__ = ["SKILL_PREFIX", "invoke_skill", "missing_skill", "run_skill_command",
           "skill_command", "skill_commands"]

# `/skill:<name> [request]`, as the phase-2 contract writes it.
SKILL_PREFIX = "skill:"


def skill_commands(snapshot: SkillSnapshot, builtins: frozenset[str]
                   ) -> dict[str, tuple[str, Skill]]:
    """Every `/<name>` that invokes a skill, and what it is (`alias` or `skill`), as a
    command resolves it: a built-in's name is never a skill's, an alias comes before a
    skill's name, and a skill the person may not invoke has no name here."""
    found: dict[str, tuple[str, Skill]] = {}
    for skill in snapshot.skills:
        if skill.command and skill.command not in builtins and skill.user_invocable:
            found[skill.command] = ("alias", skill)
    for skill in snapshot.skills:
        if skill.user_invocable and skill.name not in builtins and skill.name not in found:
            found[skill.name] = ("skill", skill)
    return found


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
        tool = ctx.registry.get(skill.command_tool or "")
        if tool is None or tool.text_argument is None:
            raise CommandError(
                f"skill '{skill.name}': tool '{skill.command_tool}' cannot take a "
                "text request.")
        dispatch = ToolDispatch(skill.name, tool.name, {tool.text_argument: request})
        return CommandOutcome(CommandResult(command, skill=skill.name, dispatch=dispatch))
    return CommandOutcome(CommandResult(command, skill=skill.name,
                                        invocation=SkillInvocation(skill.name, request)))


def skill_command(ctx: CommandContext, argument: str) -> CommandOutcome:
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


def run_skill_command(ctx: CommandContext, name: str, argument: str) -> CommandOutcome | None:
    """`/skill:<name>`, `/<alias>` or `/<skill-name>` with `argument`; None when `name`
    is none of them (an unknown command)."""
    snap = ctx.session.skill_snapshot
    if name.startswith(SKILL_PREFIX):
        wanted = name.removeprefix(SKILL_PREFIX)
        if not wanted:
            raise CommandError("/skill: requires a skill name (/skill:<name>).")
        skill = snap.get(wanted)
        if skill is None:
            raise missing_skill(snap, wanted)
        return invoke_skill(ctx, name, skill, argument)
    # The alias wins over a skill of that name (the loader warned of the clash).
    skill = snap.by_command(name) or snap.get(name)
    if skill is None:
        if snap.excluded_reason(name) is not None:
            raise missing_skill(snap, name)
        return None
    return invoke_skill(ctx, name, skill, argument)
