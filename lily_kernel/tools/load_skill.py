"""The `load_skill` tool: how a model that calls tools declares the request's one skill.

It is offered while the model may still choose (not when the person forced a skill);
the request's selection (`ToolContext.skills`, the turn's) decides whether the skill
may be selected and what the model then reads: its SKILL.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lily_kernel.errors import ToolError
from lily_kernel.tools.context import ToolContext
from lily_kernel.tools.registry import ARGS_CONFIG, Tool, ToolOutcome

__all__ = ["LOAD_SKILL", "skill_selection_tool"]

LOAD_SKILL = "load_skill"


@dataclass(frozen=True)
class LoadSkillArgs:
    __pydantic_config__ = ARGS_CONFIG

    name: str
    """Exact skill name."""


async def _load_skill(args: LoadSkillArgs, ctx: ToolContext) -> str:
    if ctx.skills is None:
        raise ToolError("no skill can be selected here.")
    return ctx.skills.select(args.name)


def _announce(arguments: dict[str, Any], outcome: ToolOutcome) -> str | None:
    """A selection announces itself (`Skill: x (selected by the model)`); a refusal says
    which name was refused and why."""
    name = arguments.get("name")
    if outcome.status == "refused":
        return f"load_skill {name!r}: Refused: {outcome.text}."
    return f"load_skill {name!r}: {outcome.text}" if outcome.status == "failed" else None


def skill_selection_tool() -> Tool:
    return Tool(
        LOAD_SKILL,
        "Declare the one skill you will follow for this request and receive its "
        "SKILL.md. At most one call per request.",
        LoadSkillArgs, _load_skill, offered="while_selecting", governed=False,
        kept_by=None, announce=_announce,
    )
