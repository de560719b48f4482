"""The kinds of event of a model at work: the skill chosen for a request, a load that
gave the cell no model, each call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from lily_kernel.events.kinds import (
    CallOutcome,
    DecidedBy,
    EventData,
    LoadOutcome,
    SelectionOutcome,
)

__all__ = ["ModelCall", "ModelLoad", "SkillSelection"]


@dataclass(frozen=True, kw_only=True)
class SkillSelection(EventData):
    """The skill of a request to a model without tools: the shortlist (name and score
    of its best matches), who decided (the ranker, or the model among near-equal
    matches) and why, and what came of it."""

    event: ClassVar[str] = "skill_selection"
    outcome: SelectionOutcome
    name: str | None = None
    detail: str | None = None
    reply: str = ""  # the model's declaration, when it was asked
    shortlist: list[dict[str, Any]] | None = None
    decided_by: DecidedBy | None = None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class ModelLoad(EventData):
    """A load that did not give the cell a model (failed or stopped)."""

    event: ClassVar[str] = "model_load"
    model: str | None
    outcome: LoadOutcome
    error: dict[str, str] | None = None


@dataclass(frozen=True, kw_only=True)
class ModelCall(EventData):
    event: ClassVar[str] = "model_call"
    model: str
    step: int | str
    outcome: CallOutcome
    latency_ms: float
    context_window: int | None
    supports_tools: bool
    response: dict[str, Any] | None = None  # text and tool calls
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    cost: float | None = None
    error: dict[str, str] | None = None  # kind and message
