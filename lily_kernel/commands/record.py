"""What the commands see of the session's record (docs/sessions.md): the workspace's
recorded conversations, one taken up, the change a conversation command asks for. The
record itself is the runtime's (record/answers.py); commands only read it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

__all__ = ["AskAgain", "Conversation", "ConversationBook", "ConversationChange"]


@dataclass(frozen=True)
class Conversation:
    """A recorded conversation of the workspace, as /resume lists it."""

    id: str
    notebook: str | None
    when: str  # its last turn's time
    turns: int
    first: str  # its first request


@dataclass(frozen=True)
class ConversationChange:
    """The conversation a successful /new or /resume puts in place: its messages and,
    taken up, the record's account of its turns (the `conversation` event lists them)
    and the turns left out (their cells are no longer in the notebook)."""

    how: Literal["new", "resumed"]
    messages: tuple[dict[str, Any], ...] = ()
    source: str | None = None
    turns: tuple[dict[str, Any], ...] = ()
    left_out: tuple[str, ...] = ()


class ConversationBook(Protocol):
    """The workspace's recorded conversations."""

    def conversations(self) -> list[Conversation]:
        """Newest first, a bounded number."""

    def resume(self, wanted: str) -> ConversationChange:
        """The conversation `wanted` names (its id, or the start of it); raises
        CommandError when none or several do."""


@dataclass(frozen=True)
class AskAgain:
    """A command's intent for the runtime (/rerun): the model answers `request` afresh,
    whatever the record holds; None: the last turn of this session again, in its
    place."""

    request: str | None
