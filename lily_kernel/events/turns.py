"""The record's kinds of event: each chat turn as the record keeps it, a turn answered
from the record and where it stopped being so, and where a conversation begins
(docs/sessions.md). Declared like every kind (events/kinds.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from lily_kernel.events.kinds import EventData

__all__ = ["ConversationHow", "ConversationStarted", "TurnDiverged", "TurnRecorded",
           "TurnReplay", "TurnSource"]

# Who answered a turn: the model; the record (every step); the record, then the model
# from the step where the request differed; the model, stopped by the person.
TurnSource = Literal["model", "record", "diverged", "stopped"]
# How a conversation began: afresh (/new), another recorded one taken up (/resume), or
# the notebook's recorded one continued by its first new chat cell.
ConversationHow = Literal["new", "resumed", "continued"]


@dataclass(frozen=True, kw_only=True)
class TurnReplay(EventData):
    """A chat turn whose key is in the record: its answer is given again, from the
    `session` that recorded it, `recorded_at`, by `model`."""

    event: ClassVar[str] = "turn_replay"
    key: str
    session: str
    recorded_at: str
    model: str | None


@dataclass(frozen=True, kw_only=True)
class TurnDiverged(EventData):
    """A replayed turn whose request to the model differs from the recorded one at
    `step` (a tool's result, or the system context at step 1): the model answers from
    there."""

    event: ClassVar[str] = "turn_diverged"
    step: int


@dataclass(frozen=True, kw_only=True)
class TurnRecorded(EventData):
    """A chat turn as the record keeps it: its `key` (and the digest of each `parts`
    of it), the cell, what the turn added to the conversation (`messages`, paths
    written as the record's tokens) and each model call (`steps`: the request's digest
    and the answer, as `model_call` holds it)."""

    event: ClassVar[str] = "turn"
    key: str
    parts: dict[str, str]
    conversation: str
    notebook: str | None
    cell_id: str | None
    code: str  # the cell as the person wrote it
    text: str  # the request (a `/skill` cell's, without the command)
    source: TurnSource
    rerun: bool = False  # it replaces the turn before it in its conversation (/rerun)
    recorded_at: str | None = None  # answered from the record: when it was recorded
    model: str | None = None
    messages: list[dict[str, Any]]
    steps: list[dict[str, Any]]


@dataclass(frozen=True, kw_only=True)
class ConversationStarted(EventData):
    """This session's conversation from here on (`id`): `how` it began, the recorded
    conversation it takes up (`source`), the turns taken up (each: code, text, cell_id,
    messages) and those left out because their cells are no longer in the notebook."""

    event: ClassVar[str] = "conversation"
    id: str
    how: ConversationHow
    source: str | None = None
    turns: list[dict[str, Any]]
    left_out: list[str]
