"""The request the runtime sends to the model for one turn, built from session state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lily_kernel.persona import Persona
from lily_kernel.prompting.skill_text import bounded_body, skill_body
from lily_kernel.prompting.system import Catalog, build_catalog, build_system_prompt
from lily_kernel.skills import Skill, SkillSnapshot

__all__ = ["EMPTY_REQUEST_TEXT", "ModelRequest", "build_model_request"]

# What the model is told when `/skill name` (or `/plan`) comes with no request text.
EMPTY_REQUEST_TEXT = "Apply the skill to the conversation so far."


@dataclass(frozen=True)
class ModelRequest:
    """Messages (system first, then history, then the new user turn); the catalog the
    system context lists (None when the person forced a skill)."""

    messages: tuple[dict[str, Any], ...]
    user_message: dict[str, Any]
    forced_skill: str | None = None
    catalog: Catalog | None = None
    forced_left: int = 0  # characters of the forced SKILL.md left out, to fit

    @property
    def system(self) -> str:
        return str(self.messages[0]["content"])


def build_model_request(
    *,
    persona: Persona,
    snapshot: SkillSnapshot,
    history: list[dict[str, Any]],
    user_text: str,
    catalog_max_chars: int,
    forced_skill: Skill | None = None,
    tool_calls: bool = True,
    keep: frozenset[str] = frozenset(),
    body_max_chars: int | None = None,
) -> ModelRequest:
    """A conversational turn (the catalog and the selection rules) or a forced-skill
    turn (its body in the system context).

    `tool_calls` False: a model that cannot call tools gets no catalog and the rules of
    a structured declaration instead of `load_skill`. `keep`: skills the catalog lists
    whatever its budget (the request's shortlist). `body_max_chars`: what a forced
    skill's SKILL.md may take (budget.py `skill_body_budget`: the rule of every path)."""
    text = user_text.strip() or (EMPTY_REQUEST_TEXT if forced_skill else "")
    user_message = {"role": "user", "content": text}
    catalog = (build_catalog(snapshot.skills, catalog_max_chars, keep)
               if forced_skill is None and tool_calls else None)
    body, left = (bounded_body(skill_body(forced_skill, user_text.strip()), body_max_chars)
                  if forced_skill is not None else ("", 0))
    system = {"role": "system",
              "content": build_system_prompt(persona, catalog, forced_skill, tool_calls,
                                             forced_body=body)}
    return ModelRequest(
        messages=(system, *history, user_message),
        user_message=user_message,
        forced_skill=forced_skill.name if forced_skill else None,
        catalog=catalog,
        forced_left=left,
    )
