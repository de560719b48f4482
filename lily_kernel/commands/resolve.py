"""Which command or skill a `/name` is: the one resolver for running a cell, completion,
Shift-Tab, `/help` and the trust question. Pure.

In this order: a built-in command; `/skill:<name>`; a skill's alias (`command:`); a
skill's exact name. A skill with `user-invocable: false` answers no `/` form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from lily_kernel.commands.registry import CommandSpec, CommandTable
from lily_kernel.skills import Skill, SkillSnapshot

__all__ = ["SKILL_PREFIX", "Resolved", "resolve", "skill_commands"]

# `/skill:<name> [request]`, as the phase-2 contract writes it.
SKILL_PREFIX = "skill:"


@dataclass(frozen=True)
class Resolved:
    """What a `/name` is. `command`: a built-in; `skill`: the skill it invokes, `how`
    it was named; `wanted`: the skill name asked for when none is available by it (an
    excluded or held one, `/skill:<name>` of an unknown one), so the error can say why."""

    how: Literal["command", "prefix", "alias", "name", "unknown"]
    command: CommandSpec | None = None
    skill: Skill | None = None
    wanted: str | None = None


def skill_commands(snapshot: SkillSnapshot, builtins: frozenset[str]
                   ) -> dict[str, tuple[Literal["alias", "name"], Skill]]:
    """Every `/<name>` that invokes a skill, and how (`alias` or `name`), as `resolve`
    decides: a built-in's name is never a skill's, an alias comes before a skill's name,
    and a skill the person may not invoke has no name here."""
    found: dict[str, tuple[Literal["alias", "name"], Skill]] = {}
    for skill in snapshot.skills:
        if skill.command and skill.command not in builtins and skill.user_invocable:
            found[skill.command] = ("alias", skill)
    for skill in snapshot.skills:
        if skill.user_invocable and skill.name not in builtins and skill.name not in found:
            found[skill.name] = ("name", skill)
    return found


def resolve(name: str, snapshot: SkillSnapshot, commands: CommandTable) -> Resolved:
    """What `/name` runs in this snapshot."""
    command = commands.get(name)
    if command is not None:
        return Resolved("command", command=command)
    if name.startswith(SKILL_PREFIX):
        wanted = name.removeprefix(SKILL_PREFIX)
        return Resolved("prefix", skill=snapshot.get(wanted), wanted=wanted)
    # The alias wins over a skill of that name (the loader warned of the clash).
    alias = snapshot.by_command(name)
    if alias is not None:
        return Resolved("alias", skill=alias)
    skill = snapshot.get(name)
    if skill is not None:
        return Resolved("name", skill=skill)
    return Resolved("unknown", wanted=name)
