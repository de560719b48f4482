"""What a session has said and decided: one value beside the workspace it was built from
and the services it runs (runtime/core.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from lily_kernel.display import Told
from lily_kernel.runtime.collaborators import TurnFacts
from lily_kernel.session import Session
from lily_kernel.tools import PolicyState

__all__ = ["SessionState"]


@dataclass
class SessionState:
    """The session (its conversation, skills, persona, model), the notices said once,
    whether the trust question was answered (runtime/trust_flow.py), the person's policy
    choices, and the last chat turn with where it begins in the history (`/rerun`)."""

    session: Session
    told: Told = field(default_factory=Told)
    trust_answered: bool = False
    policy: PolicyState = field(default_factory=PolicyState)
    last_turn: tuple[TurnFacts, int] | None = None

