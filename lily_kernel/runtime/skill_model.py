"""A skill's `model:` applied to the turns the person starts with it (`/skill`, its
alias), where the person allows it (skills/overrides.py decides; LILY_SKILL_MODELS is
the person's own allowlist).

The model is chosen before the turn's first call and made through the session's own
seam (`Collaborators.make_model`), then given to the session's record like any turn's
model: recorded, and answered from the record by Run All. A skill the model loads in
the middle of a turn keeps the turn's model (a turn's calls are one model's record).
It lasts the turn: the next is the person's model again. The cell says which model
answers and, when the skill's is refused, why.
"""

from __future__ import annotations

from lily_kernel.display import Notice
from lily_kernel.display.overrides import model_not_allowed, model_used
from lily_kernel.runtime.sink import CellSink
from lily_kernel.skills import Skill
from lily_kernel.skills.overrides import (
    ModelRefusal,
    OverrideSettings,
    model_decision,
    requested_model,
)

__all__ = ["choose_skill_model"]


def choose_skill_model(skill: Skill, settings: OverrideSettings, person: str,
                       sink: CellSink) -> str | None:
    """The model the turn runs on while `skill` is active: its own where the person's
    `settings` allow it (None: the person's, `person`); the cell says which, or why not."""
    decision = model_decision(skill, settings)
    if decision is None or decision == person:
        return None
    if isinstance(decision, ModelRefusal):
        wanted = requested_model(skill) or ""
        sink.show(Notice(model_not_allowed(skill.name, wanted, person)))
        return None
    sink.show(Notice(model_used(skill.name, decision)))
    return decision
