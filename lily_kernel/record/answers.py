"""The kernel's record of its notebook's turns: Run All answered from the record, a
reopened notebook continued, `/resume` (docs/sessions.md).

A chat turn whose key is recorded in the workspace (`index.py`: the session logs' `turn`
events) is answered from the record (keeper.py, turn_model.py); the recorded turns of a
conversation are read back for the notebook's first new chat cell (continued, the
turns whose cells are no longer in the saved notebook left out and named) and for
`/resume`. A record is data: what it holds is shown and read, checked as it is read
(`build` against its kind, the steps' answers as replay checks them); the tools it
called run again through the gate, under today's policy.
"""

from __future__ import annotations

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
from lily_kernel.llm.records import messages_problem, response_problem
from lily_kernel.record.index import Entry, RecordIndex, near_of
from lily_kernel.record.keeper import Decision, Recorded, RecordKeeper
from lily_kernel.record.key import KEY_PARTS
from lily_kernel.record.notebook import (
    TurnCell,
    earlier_turns,
    notebook_from_cell,
    notebook_of,
    read_saved_cells,
    shown_path,
)
from lily_kernel.runtime.collaborators import Collaborators, TurnFacts
from lily_kernel.runtime.runtime import LilyRuntime
from lily_kernel.validation import ShapeError, build

__all__ = ["NotebookRecord", "TurnRef", "start_recorded_session"]

LISTED = 20  # conversations /resume lists
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


def start_recorded_session(workspace: Path) -> LilyRuntime:
    """The kernel's session: its turns recorded, and answered from the record."""
    return LilyRuntime.start(workspace, collaborators=Collaborators(record=NotebookRecord))


class NotebookRecord(RecordKeeper):
    """The workspace's record, as the notebook's kernel reads and writes it."""

    def __init__(self, runtime: LilyRuntime) -> None:
        super().__init__(runtime)
        env = runtime.env
        self.index = RecordIndex(env.workspace, writable=runtime.log.enabled)
        self.path = notebook_of(env.host.environ, env.workspace)
        # Read as the session starts (the kernel starts it in the background, while the
        # front end connects): a cell then only looks its turn up.
        self._problem = self.index.refresh()

    def notebook(self) -> str | None:
        return shown_path(self.path, self.runtime.env.workspace) if self.path else None

    # --- a turn --------------------------------------------------------------------

    def decide(self, facts: TurnFacts) -> Decision:
        problem, self._problem = self.index.refresh() or self._problem, None
        notices = [problem] if problem and self.runtime.told.first("record index") else []
        self.path = notebook_from_cell(facts.cell_id) or self.path
        first, self.considered = not self.considered, True
        history = self.runtime.session.conversation_state.messages
        parts, key = self.key(facts, history)
        fresh = facts.fresh or self.runtime.env.config.answers == "fresh"
        found = None if fresh else self._found(key)
        decision = Decision(parts, key, found, notices=notices)
        if found is None and not fresh:
            decision.notices.extend(self._not_replayed(parts))
        if found is not None or fresh or not first or history or self.path is None:
            return self._matching(decision)
        return self._matching(self._continued(facts, decision))

    def _matching(self, decision: Decision) -> Decision:
        found = decision.found
        if found is not None:
            requests = [s["request"] for s in found.steps]
            decision.matches = lambda step, digest: step < len(requests) and \
                requests[step] == digest
        return decision

    def _found(self, key: str) -> Recorded | None:
        """The recorded turn of `key` a model answered, read and checked."""
        entry = self.index.answer(key)
        if entry is None:
            return None
        turn = self._turn(entry)
        if turn is None or turn[0].key != key or turn[0].source not in ("model", "diverged") \
                or not _replayable(turn[0].steps):
            self.index.forget(entry)
            return None
        return Recorded(turn[0].model, turn[0].steps, turn[1], turn[2])

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

    def _continued(self, facts: TurnFacts, decision: Decision) -> Decision:
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
        decision.parts, decision.key = self.key(facts, history)
        decision.found = self._found(decision.key)
        return decision

    def _latest(self, notebook: str | None) -> str | None:
        """The notebook's newest recorded conversation (of another session)."""
        mine = self.runtime.session.session_id[:8]
        turns = [e for e in self.index.entries if e.kind == "turn" and
                 e.notebook == notebook and not e.conversation.startswith(f"{mine}-")]
        return max(turns, key=lambda e: e.ts).conversation if turns else None

    def conversation_turns(self, conversation: str) -> list[TurnRef]:
        """A recorded conversation's turns, in order: those it took up, then its own
        (a /rerun's in place of the turn before it)."""
        found: list[TurnRef] = []
        entries = sorted((e for e in self.index.entries if e.conversation == conversation),
                         key=lambda e: (e.ts, e.at))
        for entry in entries:
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
                                 messages_problem(turn[0].messages) is None))
        return found

    def kept(self, event: Event, kind: str, text: str) -> None:
        written, path = self.runtime.log.written, self.runtime.log.path
        if written is None or path is None:
            return
        data = event.data
        self.index.add(Entry(
            kind="turn" if kind == "turn" else "conversation", log=path.name, at=written[0],
            size=written[1], ts=event.ts, conversation=self.conversation,
            notebook=data.get("notebook"), key=data.get("key"), source=data.get("source"),
            text=text[:80], near=near_of(data.get("parts"))), written[0] + written[1])

    # --- /resume --------------------------------------------------------------------

    def conversations(self) -> list[Conversation]:
        self.index.refresh()
        by: dict[str, list[Entry]] = {}
        for entry in self.index.entries:
            if entry.kind == "turn":
                by.setdefault(entry.conversation, []).append(entry)
        newest = sorted(by.values(), key=lambda es: max(e.ts for e in es), reverse=True)
        return [Conversation(es[0].conversation, es[0].notebook,
                             recorded_time(max(e.ts for e in es)), len(es),
                             min(es, key=lambda e: e.ts).text)
                for es in newest[:LISTED]]

    def resume(self, wanted: str) -> ConversationChange:
        self.index.refresh()
        ids = sorted({e.conversation for e in self.index.entries if e.kind == "turn"
                      and e.conversation.startswith(wanted)})
        if len(ids) != 1:
            raise CommandError(f"/resume: no recorded conversation '{wanted}' in this "
                               "workspace; /resume lists them." if not ids else
                               f"/resume: '{wanted}' names {len(ids)} conversations: "
                               f"{', '.join(ids[:5])}.")
        turns = self.conversation_turns(ids[0])
        left: list[int] = []
        notebook = next(e.notebook for e in self.index.entries if e.conversation == ids[0]
                        and e.kind == "turn")
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


def _replayable(steps: list[dict[str, Any]]) -> bool:
    """Whether a record's steps can be given again (each a request digest and an
    answer replay can read: a crafted record is refused here, not half-replayed)."""
    return bool(steps) and all(
        isinstance(s, dict) and isinstance(s.get("request"), str)
        and isinstance(s.get("response"), dict) and response_problem(s["response"]) is None
        and isinstance(s.get("model"), str) for s in steps)


def _taken_up(item: Any, ts: str) -> TurnRef | None:
    """A turn a conversation took up, as its `conversation` event lists it."""
    if not isinstance(item, dict):
        return None
    code, text, cell, messages = (item.get(k) for k in ("code", "text", "cell_id", "messages"))
    if not (isinstance(code, str) and isinstance(text, str) and
            (cell is None or isinstance(cell, str)) and isinstance(messages, list)
            and all(isinstance(m, dict) for m in messages)):
        return None
    return TurnRef(code, text, cell, messages, ts, messages_problem(messages) is None)
