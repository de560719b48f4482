"""The session: a plain container of state for one notebook. It never calls the model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lily_kernel.config import ModelConfig
from lily_kernel.persona import Persona
from lily_kernel.skills import SkillIndex, SkillRanker, SkillSnapshot

__all__ = ["ConversationState", "Session"]


@dataclass
class ConversationState:
    """The model-facing history, in OpenAI chat format, appended in order."""

    messages: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Session:
    """One notebook's state. Fields are replaced only by commands that succeed.

    `model_config` is the configuration's own `ModelConfig` (not a copy of its keys),
    with `model` set to the embedded model when nothing is configured and it is
    installed; `embedded_default` then says so. `skill_index` keeps the ranker of the
    snapshot beside it (the snapshot is a plain value).
    """

    session_id: str
    created_at: str
    active_agent: str
    persona: Persona
    skill_snapshot: SkillSnapshot
    model_config: ModelConfig
    conversation_state: ConversationState = field(default_factory=ConversationState)
    embedded_default: bool = False
    skill_index: SkillIndex = field(default_factory=SkillIndex, compare=False, repr=False)

    def ranker(self) -> SkillRanker:
        """The ranker of the session's snapshot (indexed on its first ranking)."""
        return self.skill_index.ranker(self.skill_snapshot)

    def held_ranker(self) -> SkillRanker:
        """The ranker of the snapshot's held skills (for `/skills <words>` only)."""
        return self.skill_index.held_ranker(self.skill_snapshot)
