"""Asking the person about a tool call, through the cell's sink: the `ask` of a tool context.

The question reaches the person as Jupyter's input request; only `y`/`yes` approves,
and `a`/`always` where the question offers it (yes, and for the rest of the session).
Every question is an `approval` event (approved, always, declined, unanswerable, or
interrupted when the stop button ends the cell at it). Where no one can answer, the
call is refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from lily_kernel.errors import ToolRefusedError
from lily_kernel.events import Answer, EventLog
from lily_kernel.runtime.sink import CellSink, SilentSink
from lily_kernel.tools import AskReason, Question
from lily_kernel.tools.context import Ask
from lily_kernel.tools.questions import ALWAYS

__all__ = ["YES", "answer_of", "asker"]

YES = frozenset({"y", "yes"})


def answer_of(reply: str | None, always: bool = False) -> Answer:
    """A reply to a yes/no question as its `approval` outcome (None: no one to ask);
    `always`: the question offered `a` too."""
    if reply is None:
        return "unanswerable"
    said = reply.strip().lower()
    if always and said in ALWAYS:
        return "always"
    return "approved" if said in YES else "declined"


def asker(sink: CellSink, log: EventLog, tool: str, why: AskReason | None = None,
          on_always: Callable[[], None] | None = None) -> Ask:
    """The `ask` a call of `tool` gets in its context (`why` it is asked: the refusal
    where no one can answer says how to allow it, where anything can). With
    `on_always`, `a` is an answer too: yes, and `on_always` records it for the session."""

    async def ask(question: Question) -> bool:
        from lily_kernel.events import Approval  # (a kind loaded with its first use)

        try:
            answer = await sink.ask(question.text)
        except asyncio.CancelledError:
            # Logged too: replay must stop this cell at this question, not answer it
            # with a later cell's answer.
            log.emit(Approval(tool=tool, question=question.text, outcome="interrupted"))
            raise
        outcome = answer_of(answer, always=on_always is not None)
        log.emit(Approval(tool=tool, question=question.text, outcome=outcome))
        if answer is None:
            from lily_kernel.prompting import unanswerable_reason  # (not at the start)

            nobody = sink.nobody if isinstance(sink, SilentSink) else None
            raise ToolRefusedError(unanswerable_reason(question.action, tool, why, nobody))
        if outcome == "always" and on_always is not None:
            on_always()
        return outcome in ("approved", "always")

    return ask
