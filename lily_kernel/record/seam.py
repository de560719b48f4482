"""The one seam between the runtime and the session's record (docs/sessions.md): what
the record is made from (`RecordOpening`, with the log's `emit`), what each chat turn
gives it (`TurnInputs`, a frozen value), and what it gives back (`TurnPlan`). The record
holds nothing else of the runtime; the runtime makes these values (runtime/conversation.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lily_kernel.commands.record import ConversationBook, ConversationChange
from lily_kernel.config import ModelConfig
from lily_kernel.events import Event, EventData

if TYPE_CHECKING:  # the model seam loads with the first chat cell
    from lily_kernel.llm.base import ChatModel

__all__ = ["Emit", "MakeRecord", "RecordOpening", "SessionRecord", "Tell", "TurnFacts",
           "TurnInputs", "TurnPlan"]

Emit = Callable[[EventData], Event]  # the session log's emit
Tell = Callable[[str], None]  # a notice shown in the cell running now
Redact = Callable[[Any], Any]


@dataclass(frozen=True)
class TurnFacts:
    """A chat turn before it runs, as the runtime knows it: the request (and the skill
    the person forced), the cell, and whether the model must answer it (/rerun)."""

    text: str
    forced: str | None
    code: str
    cell_id: str | None
    fresh: bool = False  # /rerun: never from the record
    rerun: bool = False  # /rerun without a message: it replaces the last turn


@dataclass(frozen=True)
class RecordOpening:
    """What a session's record is made from, as the session starts: the workspace, the
    session, the environment it was started in (the notebook it names, the home
    folder), its log (None: not written, so nothing is indexed either), how the log
    redacts, and the skills roots of the first snapshot."""

    workspace: Path
    session_id: str
    environ: Mapping[str, str]
    log: Path | None
    redact: Redact | None
    roots: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class TurnInputs:
    """What determines a chat turn's answer, as the runtime has it now: the request, the
    conversation so far, the model's settings, the skill snapshot (its digest and
    roots), the persona (digested), the tools the policy lets the model use, and the
    `answers` setting ("fresh": never from the record)."""

    facts: TurnFacts
    history: tuple[dict[str, Any], ...]
    model: ModelConfig
    skills: str
    roots: tuple[tuple[str, str], ...]
    persona: str
    tools: tuple[str, ...]
    answers: str = "replay"


class TurnPlan(Protocol):
    """One turn as the record plans it: the history it continues (None: the session's),
    its model (the record's answers, then the live one), what is kept once it ran."""

    history: list[dict[str, Any]] | None

    async def model(self, live: Callable[[], Awaitable[ChatModel]]) -> ChatModel: ...

    def finished(self, messages: list[dict[str, Any]], stopped: bool) -> None: ...


class SessionRecord(ConversationBook, Protocol):
    """The session's record (record/answers.py): plans each chat turn, and writes down
    where a conversation begins (/new, /resume)."""

    async def plan(self, inputs: TurnInputs, notice: Tell) -> TurnPlan: ...

    def started(self, change: ConversationChange) -> None: ...


MakeRecord = Callable[[RecordOpening, Emit], SessionRecord]
