"""The kernel's record of its notebook's turns: Run All answered from the record, a
reopened notebook continued, `/resume` (docs/sessions.md).

A chat turn whose key is recorded in the workspace (`index.py`: the session logs' `turn`
events) is answered from the record (keeper.py, turn_model.py); when several recorded
turns have its key, the one whose answer the saved notebook shows in that cell (the
notebook wins), else the newest. The recorded turns of a
conversation are read back for the notebook's first new chat cell (continued, the
turns whose cells are no longer in the saved notebook left out and named) and for
`/resume`. A record is data: what it holds is shown and read, checked as it is read
(`build` against its kind, its steps and messages against their shapes: shapes.py); the
tools it called run again through the gate, under today's policy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lily_kernel.commands import Conversation, ConversationChange
from lily_kernel.display.messages import (
    continued_notice,
    left_out_notice,
    not_replayed_notice,
    recorded_time,
)
from lily_kernel.errors import CommandError
from lily_kernel.events import Event
from lily_kernel.events.turns import TurnRecorded
from lily_kernel.record.index import Entry, RecordIndex, near_of
from lily_kernel.record.keeper import Decision, Recorded, RecordKeeper
from lily_kernel.record.key import KEY_PARTS
from lily_kernel.record.notebook import (
    TurnCell,
    earlier_turns,
    notebook_from_cell,
    notebook_of,
    read_saved_cells,
    renamed_notebook,
    saved_cell,
    shown_path,
)
from lily_kernel.record.seam import Emit, RecordOpening, TurnFacts, TurnInputs
from lily_kernel.record.shapes import TakenTurn, read_messages, read_steps
from lily_kernel.validation import ShapeError, build

__all__ = ["NotebookRecord", "TurnRef"]

LISTED = 20  # conversations /resume lists
MAX_FORMER = 20  # other notebooks' conversations looked into for a renamed one's, at most
UNREADABLE = "their record cannot be read"


@dataclass(frozen=True)
class TurnRef:
    """A recorded turn of a conversation: its cell, request and messages (as recorded)."""

    code: str
    text: str
    cell_id: str | None
    messages: list[dict[str, Any]]
    ts: str
    readable: bool = True  # its messages read back as the turn engine writes them

    def item(self) -> dict[str, Any]:
        return {"code": self.code, "text": self.text, "cell_id": self.cell_id,
                "messages": self.messages}


class NotebookRecord(RecordKeeper):
    """The workspace's record, as the notebook's kernel reads and writes it."""

    def __init__(self, opening: RecordOpening, emit: Emit) -> None:
        super().__init__(opening, emit)
        self.index = RecordIndex(opening.workspace, writable=opening.log is not None)
        self.path = notebook_of(opening.environ, opening.workspace)
        self._told = False  # a damaged index is said once a session
        self._cells: set[str] = set()  # the ids of this session's chat cells
        # Read as the session starts (the kernel starts it in the background, while the
        # front end connects): a cell then only looks its turn up.
        self._problem = self.index.refresh()

    def notebook(self) -> str | None:
        return shown_path(self.path, self.opening.workspace) if self.path else None

    # --- a turn --------------------------------------------------------------------

    def decide(self, inputs: TurnInputs) -> Decision:
        facts = inputs.facts
        problem, self._problem = self.index.refresh() or self._problem, None
        notices = [problem] if problem and not self._told else []
        self._told = self._told or bool(problem)
        self.path = notebook_from_cell(facts.cell_id) or self.path
        if facts.cell_id is not None:
            self._cells.add(facts.cell_id)
        if self.path is not None:  # renamed meanwhile (the first save's rename)
            self.path = renamed_notebook(self.path, self._cells) or self.path
        first, self.considered = not self.considered, True
        history = list(inputs.history)
        parts, key = self.key(inputs, history)
        fresh = facts.fresh or inputs.answers == "fresh"
        found = None if fresh else self._found(key, facts)
        decision = Decision(parts, key, found, notices=notices)
        if found is None and not fresh:
            decision.notices.extend(self._not_replayed(parts))
        if found is not None or fresh or not first or history or self.path is None:
            return self._matching(decision)
        return self._matching(self._continued(inputs, decision))

    def _matching(self, decision: Decision) -> Decision:
        found = decision.found
        if found is not None:
            requests = [s.request for s in found.steps]
            decision.matches = lambda step, digest: step < len(requests) and \
                requests[step] == digest
        return decision

    def _found(self, key: str, facts: TurnFacts) -> Recorded | None:
        """The recorded turn of `key` a model answered, read and checked: of several,
        the one whose answer the saved notebook shows in this cell (the notebook wins),
        else the newest."""
        entries = self.index.answers(key)
        cell = saved_cell(self.path, facts.cell_id, facts.code) \
            if len(entries) > 1 and self.path is not None else None
        newest: Recorded | None = None
        for entry in entries:
            turn = self._turn(entry)
            steps = read_steps(turn[0].steps) if turn is not None else None
            if turn is None or turn[0].key != key or steps is None \
                    or turn[0].source not in ("model", "diverged"):
                self.index.forget(entry)
                continue
            recorded = Recorded(turn[0].model, steps, turn[1], turn[2])
            if cell is None or _answer_shown(turn[0].messages, cell.shown):
                return recorded
            newest = newest or recorded
        return newest

    def _not_replayed(self, parts: dict[str, str]) -> list[str]:
        """Why a turn recorded with this conversation and request is not answered from
        the record: what else differs now (the model's settings, the persona…)."""
        entry = self.index.nearest(near_of(parts) or "")
        turn = self._turn(entry) if entry is not None else None
        if turn is None:
            return []
        differ = [p for p in KEY_PARTS if turn[0].parts.get(p) != parts.get(p)]
        return [not_replayed_notice(differ, turn[1])] if differ else []

    def _turn(self, entry: Entry) -> tuple[TurnRecorded, str, str] | None:
        event = self.index.read(entry)
        if event is None:
            return None
        try:
            return (build(TurnRecorded, event["data"]), str(event.get("ts")),
                    str(event.get("session_id")))
        except ShapeError:
            return None

    def _continued(self, inputs: TurnInputs, decision: Decision) -> Decision:
        """The notebook's recorded conversation continued by its first new chat cell:
        the turns still in the saved notebook, above this cell; those no longer in it
        named. Then the key again: a recorded turn re-run after a reopen is replayed."""
        assert self.path is not None
        source = self._latest(self.notebook())
        turns = self.conversation_turns(source) if source is not None else []
        if not turns:
            return decision
        cells = read_saved_cells(self.path)
        if isinstance(cells, str):
            decision.notices.append(
                f"This notebook's recorded conversation ({len(turns)} turn(s) of "
                f"{recorded_time(turns[-1].ts)}) is not continued: {cells}.")
            return decision
        facts = inputs.facts
        kept, left = earlier_turns([TurnCell(t.cell_id, t.code) for t in turns], cells,
                                   facts.cell_id, facts.code)
        if not kept and not left:
            return decision
        chosen = [turns[n] for n in kept if turns[n].readable]
        gone = [turns[n].text for n in left]
        unreadable = [turns[n].text for n in kept if not turns[n].readable]
        if chosen:
            decision.notices.append(continued_notice(turns[-1].ts, len(chosen)))
        if gone:
            decision.notices.append(left_out_notice(gone))
        if unreadable:
            decision.notices.append(left_out_notice(unreadable, UNREADABLE))
        decision.conversation = self.conversation_event(
            "continued", source, [t.item() for t in chosen], gone)
        history = [m for t in chosen for m in self.restored(t.messages)]
        decision.history = history
        decision.parts, decision.key = self.key(inputs, history)
        decision.found = self._found(decision.key, facts)
        return decision

    def _latest(self, notebook: str | None) -> str | None:
        """The notebook's newest recorded conversation (of another session)."""
        mine = self.opening.session_id[:8]
        turns = [e for e in self.index.turns(notebook)
                 if not e.conversation.startswith(f"{mine}-")]
        return turns[0].conversation if turns else self._former(mine)

    def _former(self, mine: str) -> str | None:
        """The newest conversation recorded under a name this notebook had before it was
        renamed: the notebook by that name is gone, and one of its turns' cells is in this
        notebook's saved file (a copy, whose file is still there, takes up nothing)."""
        cells = read_saved_cells(self.path) if self.path is not None else "no notebook"
        ids = set() if isinstance(cells, str) else {c.id for c in cells if c.id}
        if not ids:
            return None
        looked: set[str] = set()
        for entry in self.index.turns():  # newest first
            if (entry.notebook in (None, self.notebook()) or entry.conversation in looked
                    or entry.conversation.startswith(f"{mine}-")):
                continue
            looked.add(entry.conversation)
            if len(looked) > MAX_FORMER:
                return None
            named = Path(entry.notebook)
            if os.path.lexists(named if named.is_absolute()
                               else self.opening.workspace / named):
                continue
            turn = self._turn(entry)
            if turn is not None and turn[0].cell_id in ids:
                return entry.conversation
        return None

    def conversation_turns(self, conversation: str) -> list[TurnRef]:
        """A recorded conversation's turns, in order: those it took up, then its own
        (a /rerun's in place of the turn before it)."""
        found: list[TurnRef] = []
        for entry in self.index.conversation(conversation):
            if entry.kind == "conversation":
                event = self.index.read(entry)
                items = (event["data"].get("turns") if event is not None else None) or []
                taken = [_taken_up(i, entry.ts) for i in items] if isinstance(items, list) \
                    else []
                found = [t for t in taken if t is not None]
                continue
            turn = self._turn(entry)
            if turn is None:
                continue
            if turn[0].rerun and found:
                found.pop()
            found.append(TurnRef(turn[0].code, turn[0].text, turn[0].cell_id,
                                 turn[0].messages, turn[1],
                                 read_messages(turn[0].messages) is not None))
        return found

    def kept(self, event: Event, kind: str, text: str) -> None:
        """Indexed from this session's log, as it was written."""
        if self.opening.log is not None:
            self.index.catch_up(self.opening.log.name)

    # --- /resume --------------------------------------------------------------------

    def conversations(self) -> list[Conversation]:
        self.index.refresh()
        by: dict[str, list[Entry]] = {}
        for entry in self.index.turns():
            by.setdefault(entry.conversation, []).append(entry)
        newest = sorted(by.values(), key=lambda es: max(e.ts for e in es), reverse=True)
        listed = []
        for es in newest[:LISTED]:  # one that took turns up is listed with them, by its first
            whole = self.conversation_turns(es[0].conversation)
            first = whole[0].text if whole else min(es, key=lambda e: e.ts).text
            listed.append(Conversation(es[0].conversation, es[0].notebook,
                                       recorded_time(max(e.ts for e in es)),
                                       max(len(whole), len(es)), first))
        return listed

    def resume(self, wanted: str) -> ConversationChange:
        self.index.refresh()
        turns_of = {e.conversation: e for e in self.index.turns()
                    if e.conversation.startswith(wanted)}
        ids = sorted(turns_of)
        if len(ids) != 1:
            raise CommandError(f"/resume: no recorded conversation '{wanted}' in this "
                               "workspace; /resume lists them." if not ids else
                               f"/resume: '{wanted}' names {len(ids)} conversations: "
                               f"{', '.join(ids[:5])}.")
        turns = self.conversation_turns(ids[0])
        left: list[int] = []
        notebook = turns_of[ids[0]].notebook
        if self.path is not None and notebook == self.notebook():
            cells = read_saved_cells(self.path)
            if not isinstance(cells, str):
                left = earlier_turns([TurnCell(t.cell_id, t.code) for t in turns], cells,
                                     None, "")[1]
        chosen = [t for n, t in enumerate(turns) if n not in left and t.readable]
        gone = [turns[n].text for n in left] + [f"{t.text} ({UNREADABLE})" for t in turns
                                                if not t.readable]
        return ConversationChange(
            "resumed", tuple(m for t in chosen for m in self.restored(t.messages)), ids[0],
            tuple(t.item() for t in chosen), tuple(gone))


def _answer_shown(messages: list[dict[str, Any]], shown: str) -> bool:
    """Whether a cell's saved outputs show a recorded turn's answer (its last text)."""
    texts = [str(m["content"]) for m in messages if isinstance(m, dict)
             and m.get("role") == "assistant" and isinstance(m.get("content"), str)]
    answer = texts[-1].strip() if texts else ""
    return bool(answer) and answer in shown  # an empty answer is in every cell: not shown


def _taken_up(item: Any, ts: str) -> TurnRef | None:
    """A turn a conversation took up, as its `conversation` event lists it."""
    try:
        taken = build(TakenTurn, item) if isinstance(item, dict) else None
    except ShapeError:
        return None
    if taken is None:
        return None
    return TurnRef(taken.code, taken.text, taken.cell_id, taken.messages, ts,
                   read_messages(taken.messages) is not None)
