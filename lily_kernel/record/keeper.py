"""What every session record does (docs/sessions.md): the key of each turn, its plan
(the model that answers it: the record's answers, then the live model), and the
turn's own record once it has run, and where a conversation begins, written to the log.

Two records build on it: the kernel's (answers.py: the workspace's record, read through
its index) and `lily replay`'s (logged.py: the replayed log's own decisions, fed back).
They differ only in how a turn is decided (`decide`) and what is kept of what was
written (`kept`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from lily_kernel.commands import Conversation, ConversationChange
from lily_kernel.display.messages import diverged_notice, replayed_notice
from lily_kernel.errors import CommandError
from lily_kernel.events import Event
from lily_kernel.events.turns import (
    ConversationHow,
    ConversationStarted,
    TurnDiverged,
    TurnRecorded,
    TurnReplay,
)
from lily_kernel.llm.base import ChatModel, ChatRequest
from lily_kernel.record.key import PathTokens, request_digest, turn_key, turn_parts
from lily_kernel.record.seam import Emit, RecordOpening, Tell, TurnInputs
from lily_kernel.record.shapes import Step
from lily_kernel.record.turn_model import Replay, ReplayModel, TurnModel, recorded_calls

__all__ = ["Decision", "Planned", "RecordKeeper", "Recorded"]


@dataclass(frozen=True)
class Recorded:
    """A turn found in the record: the model that answered it, its steps (each a
    request's digest and the answer), when and in which session it was recorded."""

    model: str | None
    steps: list[Step]
    ts: str
    session: str


@dataclass
class Decision:
    """How a turn goes: its key, the recorded turn that answers it (None: the model),
    the conversation it continues (its history, and the event saying so), notices."""

    parts: dict[str, str]
    key: str
    found: Recorded | None = None
    history: list[dict[str, Any]] | None = None
    conversation: ConversationStarted | None = None
    notices: list[str] = field(default_factory=list)
    # Replayed: whether a step's request (from 0, with its digest) is the recorded one.
    matches: Callable[[int, str], bool] | None = None


class Planned:
    """One turn's plan (runtime TurnPlan): the history it continues, its model."""

    def __init__(self, keeper: RecordKeeper, inputs: TurnInputs, notice: Tell,
                 decision: Decision) -> None:
        self.keeper, self.inputs, self.notice = keeper, inputs, notice
        self.decision = decision
        self.tokens = keeper.tokens(inputs.roots)
        self.history = decision.history
        self.turn_model: TurnModel | None = None

    async def model(self, live: Callable[[], Awaitable[ChatModel]]) -> ChatModel:
        found, decision = self.decision.found, self.decision
        if found is None or decision.matches is None:
            answering = await live()
            self.turn_model = TurnModel(self.digest, live, answering)
            return self.turn_model
        answering = await self.keeper.recorded_answers(found, live)
        replay = Replay(answering, decision.matches,
                        on_replayed=lambda: self.notice(
                            replayed_notice(found.model, found.ts)),
                        on_diverged=self._diverged)
        self.turn_model = TurnModel(self.digest, live, answering, replay)
        return self.turn_model

    def digest(self, request: ChatRequest) -> str:
        return request_digest(request.messages, request.json_schema, self.tokens,
                              self.keeper.redact)

    def _diverged(self, step: int) -> None:
        self.keeper.emit(TurnDiverged(step=step))
        self.notice(diverged_notice(step))

    def finished(self, messages: list[dict[str, Any]], stopped: bool) -> None:
        self.keeper.write_turn(self, messages, stopped)


class RecordKeeper:
    """The record's work common to the kernel and `lily replay` (see the module)."""

    def __init__(self, opening: RecordOpening, emit: Emit) -> None:
        self.opening, self.emit = opening, emit
        self.roots = opening.roots  # the skills roots of the last turn (paths' tokens)
        self.considered = False  # the first chat turn was planned: no continuation after
        self.conversation = ""
        self._count = 0
        self._begin()

    # --- what subclasses decide -----------------------------------------------------

    def decide(self, inputs: TurnInputs) -> Decision:
        """How this turn goes (in a worker thread: it may read files)."""
        raise NotImplementedError

    def kept(self, event: Event, kind: str, text: str) -> None:
        """A turn or conversation just written to the log (the kernel indexes it)."""

    async def recorded_answers(self, found: Recorded,
                               live: Callable[[], Awaitable[ChatModel]]) -> ChatModel:
        """The model giving a found turn's recorded answers, in order."""
        return ReplayModel(recorded_calls(found.steps))

    def notebook(self) -> str | None:
        """The notebook as the record names it (None: not known)."""
        return None

    def conversations(self) -> list[Conversation]:
        return []

    def resume(self, wanted: str) -> ConversationChange:
        raise CommandError(f"/resume: no recorded conversation '{wanted}' here.")

    # --- the session's record (record/seam.py SessionRecord) -------------------------

    async def plan(self, inputs: TurnInputs, notice: Tell) -> Planned:
        self.roots = inputs.roots
        decision = await asyncio.to_thread(self.decide, inputs)
        for said in decision.notices:
            notice(said)
        if decision.conversation is not None:
            self._write_conversation(decision.conversation)
        found = decision.found
        if found is not None:
            self.emit(TurnReplay(key=decision.key, session=found.session,
                                 recorded_at=found.ts, model=found.model))
        return Planned(self, inputs, notice, decision)

    def started(self, change: ConversationChange) -> None:
        """/new or /resume: a conversation begins here."""
        self.considered = True
        self._begin()
        self._write_conversation(self.conversation_event(change.how, change.source,
                                                         list(change.turns),
                                                         list(change.left_out)))

    # --- keys, digests, the record's own events ----------------------------------------

    def tokens(self, roots: tuple[tuple[str, str], ...] | None = None) -> PathTokens:
        """The paths written as tokens: the workspace, the skills roots (the last turn's
        unless given), the home folder."""
        opening = self.opening
        return PathTokens.of(opening.workspace, self.roots if roots is None else roots,
                             opening.environ.get("HOME"))

    def key(self, inputs: TurnInputs,
            history: list[dict[str, Any]]) -> tuple[dict[str, str], str]:
        facts = inputs.facts
        parts = turn_parts(history=history, text=facts.text, forced=facts.forced,
                           model=inputs.model, snapshot_digest=inputs.skills,
                           persona=inputs.persona, tools=inputs.tools,
                           tokens=self.tokens(inputs.roots), redact=self.redact)
        return parts, turn_key(parts)

    def redact(self, value: Any) -> Any:
        redact = self.opening.redact
        return redact(value) if redact is not None else value

    def recorded(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Messages as the record keeps them: redacted, paths as tokens."""
        kept: list[dict[str, Any]] = self.tokens().tokens(self.redact(messages))
        return kept

    def restored(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Recorded messages with this machine's paths."""
        back: list[dict[str, Any]] = self.tokens().paths(messages)
        return back

    def _begin(self) -> None:
        self._count += 1
        self.conversation = f"{self.opening.session_id[:8]}-{self._count}"

    def conversation_event(self, how: ConversationHow, source: str | None,
                           turns: list[dict[str, Any]],
                           left_out: list[str]) -> ConversationStarted:
        return ConversationStarted(id=self.conversation, how=how, source=source, turns=turns,
                                   left_out=left_out)

    def _write_conversation(self, event: ConversationStarted) -> None:
        self.kept(self.emit(event), "conversation", "")

    def write_turn(self, planned: Planned, messages: list[dict[str, Any]],
                   stopped: bool) -> None:
        facts, decision, model = planned.inputs.facts, planned.decision, planned.turn_model
        found = decision.found
        source = "stopped" if stopped else model.source if model is not None else "model"
        replayed = source in ("record", "diverged") and found is not None
        event = self.emit(TurnRecorded(
            key=decision.key, parts=decision.parts, conversation=self.conversation,
            notebook=self.notebook(), cell_id=facts.cell_id, code=facts.code,
            text=facts.text, source=source, rerun=facts.rerun,
            recorded_at=found.ts if replayed and found is not None else None,
            model=(found.model if source == "record" and found is not None
                   else model.name if model is not None else None),
            messages=self.recorded(messages), steps=model.steps if model is not None else []))
        self.kept(event, "turn", facts.text)
