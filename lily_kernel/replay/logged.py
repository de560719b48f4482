"""`lily replay`'s record: what the recorded session's record decided, fed back.

A session whose turns were answered from the record (Run All after a restart), or that
continued or resumed a recorded conversation, replays against its own log: the scratch
copy holds no record (replay leaves `.lily/sessions` out), so for each cell the turn
found in the record (`turn_replay`: its key is derived again and compared), the step
where the live model took over (`turn_diverged`) and the conversation taken up
(`conversation`) are fed back from the log, as the person's answers are. The recorded
answers themselves are the log's `model_call`s, which replay's model gives in order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from lily_kernel.commands import ConversationChange
from lily_kernel.errors import CommandError
from lily_kernel.events import EventData
from lily_kernel.events.turns import ConversationStarted, TurnDiverged, TurnReplay
from lily_kernel.llm.base import ChatModel
from lily_kernel.record.keeper import Decision, Recorded, RecordKeeper
from lily_kernel.record.seam import Emit, RecordOpening, TurnInputs
from lily_kernel.validation import ShapeError, build

__all__ = ["RECORD_KINDS", "CellRecord", "LoggedRecord", "cell_records"]

# The kinds only a session that keeps a record writes (events/turns.py).
RECORD_KINDS = frozenset({"turn", "turn_replay", "turn_diverged", "conversation"})


@dataclass
class CellRecord:
    """What the record decided in one recorded cell."""

    replay: TurnReplay | None = None
    diverged: int | None = None
    conversation: ConversationStarted | None = None
    notebook: str | None = None


def cell_records(events: list[dict[str, Any]]) -> list[CellRecord]:
    """The record's decisions, by cell (from 0), read from a checked log."""
    cells: list[CellRecord] = []
    kinds: dict[str, type[EventData]] = {"turn_replay": TurnReplay,
                                         "turn_diverged": TurnDiverged,
                                         "conversation": ConversationStarted}
    for event in events:
        kind, data = event["event"], event["data"]
        if kind == "cell":
            cells.append(CellRecord())
        elif cells and kind == "turn":
            cells[-1].notebook = data.get("notebook") if isinstance(
                data.get("notebook"), str) else None
        elif cells and kind in kinds:
            try:
                value: EventData = build(kinds[kind], data)
            except ShapeError:
                continue  # a field missing: the comparison shows the event as it differs
            if isinstance(value, TurnReplay):
                cells[-1].replay = value
            elif isinstance(value, TurnDiverged):
                cells[-1].diverged = value.step
            elif isinstance(value, ConversationStarted):
                cells[-1].conversation = value
    return cells


class LoggedRecord(RecordKeeper):
    """The record of a replayed session: each cell's decisions as the log has them
    (`cell`: the cell running now, set by replay/run.py)."""

    def __init__(self, opening: RecordOpening, emit: Emit, cells: list[CellRecord]) -> None:
        super().__init__(opening, emit)
        self.cells = cells
        self.cell = -1

    def _now(self) -> CellRecord:
        return self.cells[self.cell] if 0 <= self.cell < len(self.cells) else CellRecord()

    def notebook(self) -> str | None:
        return self._now().notebook

    def decide(self, inputs: TurnInputs) -> Decision:
        self.considered = True
        now = self._now()
        parts, key = self.key(inputs, list(inputs.history))
        decision = Decision(parts, key)
        taken = now.conversation
        if taken is not None and taken.how == "continued":
            decision.conversation = taken
            decision.history = [m for t in taken.turns for m in self._messages(t)]
            decision.parts, decision.key = self.key(inputs, decision.history)
        replay = now.replay
        if replay is not None and replay.key == decision.key:
            diverged = now.diverged
            decision.found = Recorded(replay.model, [], replay.recorded_at, replay.session)
            decision.matches = lambda step, _digest: diverged is None or step < diverged - 1
        return decision

    def _messages(self, turn: dict[str, Any]) -> list[dict[str, Any]]:
        messages = turn.get("messages") if isinstance(turn, dict) else None
        return self.restored(messages) if isinstance(messages, list) else []

    async def recorded_answers(self, found: Recorded,
                               live: Callable[[], Awaitable[ChatModel]]) -> ChatModel:
        return await live()  # replay's model: the log's answers, these turns' included

    def resume(self, wanted: str) -> ConversationChange:
        taken = self._now().conversation
        if taken is None or taken.how != "resumed":
            raise CommandError(f"/resume: no recorded conversation '{wanted}' in this "
                               "workspace; /resume lists them.")
        return ConversationChange(
            "resumed", tuple(m for t in taken.turns for m in self._messages(t)),
            taken.source, tuple(taken.turns), tuple(taken.left_out))
