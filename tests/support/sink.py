"""The cell sink of tests: it keeps every value a cell showed, in order, and answers each
question with the next of the answers it was given (then None: no one can answer, as
under nbclient). The views name what a test looks at: notices, replies, a command's
results."""

from __future__ import annotations

from collections import deque
from typing import TypeVar

from lily_kernel.display import Code, Document, Notice, Reply, RunOutput, Shown

__all__ = ["RecordingSink"]

_T = TypeVar("_T")


class RecordingSink:
    """A CellSink (runtime/sink.py) that records; `answers`: the person's, in order."""

    def __init__(self, *answers: str | None) -> None:
        self.answers = deque(answers)
        self.values: list[Shown] = []
        self.streamed: list[str] = []
        self.questions: list[str] = []

    def show(self, value: Shown) -> None:
        self.values.append(value)

    def stream(self, markdown: str) -> None:
        self.streamed.append(markdown)

    async def ask(self, question: str) -> str | None:
        self.questions.append(question)
        return self.answers.popleft() if self.answers else None

    # --- what was shown, by kind ----------------------------------------------------------

    def of(self, kind: type[_T]) -> list[_T]:
        return [v for v in self.values if isinstance(v, kind)]

    @property
    def notices(self) -> list[str]:
        return [n.text for n in self.of(Notice)]

    @property
    def replies(self) -> list[str]:
        """Each finished answer's Markdown."""
        return [r.markdown for r in self.of(Reply)]

    @property
    def footers(self) -> list[str | None]:
        return [r.footer for r in self.of(Reply)]

    @property
    def outputs(self) -> list[Code | RunOutput]:
        """Code that ran, and each of its outputs."""
        return [v for v in self.values if isinstance(v, Code | RunOutput)]

    @property
    def shown(self) -> list[Document]:
        """What commands showed: each a Document (a CommandResult)."""
        return [v for v in self.values if not isinstance(v, Notice | Reply | Code | RunOutput)]
