"""A skill's `model:` applied to the turns that use it, where the person allows it
(skills/overrides.py decides; LILY_SKILL_MODELS is the person's own allowlist).

The model is made through the session's own seam (`Collaborators.make_model`: replay
gives the recording's), for the turn only: the next turn is the person's model again
unless it uses the skill too. The cell says which model answers and, when the skill's
is refused, why.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from lily_kernel.display import Notice
from lily_kernel.display.overrides import model_not_allowed, model_used
from lily_kernel.llm.base import ChatModel
from lily_kernel.runtime.sink import CellSink
from lily_kernel.skills import Skill
from lily_kernel.skills.overrides import (
    ModelRefusal,
    OverrideSettings,
    model_decision,
    requested_model,
)

__all__ = ["SkillModels"]


@dataclass(frozen=True)
class SkillModels:
    """The person's settings and how a model is made by its name (off the event loop)."""

    settings: OverrideSettings
    make: Callable[[str], Awaitable[ChatModel]]

    async def for_skill(self, skill: Skill, person: ChatModel, sink: CellSink) -> ChatModel:
        """The model the turn runs on while `skill` is active: its own where allowed,
        else `person`'s (and the cell says why)."""
        decision = model_decision(skill, self.settings)
        if decision is None or decision == person.name:
            return person
        if isinstance(decision, ModelRefusal):
            wanted = requested_model(skill) or ""
            sink.show(Notice(model_not_allowed(skill.name, wanted, person.name)))
            return person
        model = await self.make(decision)
        sink.show(Notice(model_used(skill.name, model.name)))
        return model
