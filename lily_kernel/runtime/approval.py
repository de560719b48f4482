"""Asking the person about a tool call, through the cell's sink: the `ask` of a tool context.

The question reaches the person as Jupyter's input request; only `y`/`yes` approves.
Every question is an `approval` event (approved, declined, unanswerable, or interrupted
when the stop button ends the cell at it). Where no one can answer, the call is refused.
"""

from __future__ import annotations

import asyncio

from lily_kernel.errors import ToolRefusedError
from lily_kernel.events import Answer, Approval, EventLog
from lily_kernel.prompting import unanswerable_reason
from lily_kernel.runtime.sink import CellSink
from lily_kernel.tools import AskReason, Question
from lily_kernel.tools.context import Ask

__all__ = ["YES", "answer_of", "asker"]

YES = frozenset({"y", "yes"})


def answer_of(reply: str | None) -> Answer:
    """A reply to a yes/no question as its `approval` outcome (None: no one to ask)."""
    return ("unanswerable" if reply is None else
            "approved" if reply.strip().lower() in YES else "declined")


def asker(sink: CellSink, log: EventLog, tool: str, why: AskReason | None = None) -> Ask:
    """The `ask` a call of `tool` gets in its context (`why` it is asked: the refusal
    where no one can answer says how to allow it, where anything can)."""

    async def ask(question: Question) -> bool:
        try:
            answer = await sink.ask(question.text)
        except asyncio.CancelledError:
            # Logged too: replay must stop this cell at this question, not answer it
            # with a later cell's answer.
            log.emit(Approval(tool=tool, question=question.text, outcome="interrupted"))
            raise
        outcome = answer_of(answer)
        log.emit(Approval(tool=tool, question=question.text, outcome=outcome))
        if answer is None:
            raise ToolRefusedError(unanswerable_reason(question.action, tool, why))
        return outcome == "approved"

    return ask
