"""The session: a plain container of state for one notebook. It never calls the model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from lily_kernel.config import LilyConfig, is_local_model
from lily_kernel.persona import Persona
from lily_kernel.skills import SkillSnapshot

__all__ = ["ConversationState", "ModelConfig", "Session"]


class ModelConfig(BaseModel):
    """How to reach the model; `model` None means none is configured and none is
    installed. `embedded_default`: nothing was configured, so the embedded model runs."""


    model_config = ConfigDict(frozen=True)

    model: str | None = None
    embedded_default: bool = False
    api_base: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    request_timeout: float = 60.0
    retries: int = 2
    retry_backoff: float = 0.5
    stream: bool = True
    max_steps: int = 8
    context_window: int | None = None
    footer: bool = True

    @property
    def is_local(self) -> bool:
        """Run in-process by llama.cpp (cannot call tools), not through litellm."""
        return is_local_model(self.model)

    @classmethod
    def from_config(cls, config: LilyConfig, embedded: str | None = None) -> ModelConfig:
        """The configured model; with none configured, `embedded` (the embedded model's
        name, when it is installed)."""
        values = {name: getattr(config, name) for name in cls.model_fields
                  if hasattr(config, name)}
        if values["model"] is None and embedded is not None:
            values.update(model=embedded, embedded_default=True)
        return cls(**values)


@dataclass
class ConversationState:
    """The model-facing history, in OpenAI chat format, appended in order."""

    messages: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Session:
    """One notebook's state. Fields are replaced only by commands that succeed."""

    session_id: str
    created_at: str
    active_agent: str
    persona: Persona
    skill_snapshot: SkillSnapshot
    model_config: ModelConfig
    conversation_state: ConversationState = field(default_factory=ConversationState)
