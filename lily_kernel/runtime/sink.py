"""Where a cell's output goes: the one door to what the person sees. The kernel adapter
implements it (kernel/output.py), `lily replay` answers through it (replay/recorded.py),
tests record with one (tests/support/sink.py)."""

from __future__ import annotations

from typing import Protocol

from lily_kernel.display import Shown

__all__ = ["CellSink", "SilentSink"]


class CellSink(Protocol):
    """One cell's output, as values display/ renders, and the person's answers."""

    def show(self, value: Shown) -> None:
        """Show a value: a command's result, a `Notice`, the model's finished answer (a
        `Reply`, with its footer), code that runs (`Code`) and each of its outputs as it
        comes (`RunOutput`)."""

    def stream(self, markdown: str) -> None:
        """The model's answer so far, while it streams (then shown whole, as a Reply)."""

    async def ask(self, question: str) -> str | None:
        """The person's answer to a yes/no question (Jupyter's input request); None
        when no one can answer (nbclient, papermill, a frontend without stdin)."""


class SilentSink:
    """A cell sink that shows nothing and where no one answers (as under nbclient): for
    runs no one watches, `lily eval`'s sessions, benchmarks and tests; `nobody`, why no
    one answers, where that is not a notebook's runner (an MCP client's call)."""

    def __init__(self, nobody: str | None = None) -> None:
        self.nobody = nobody

    def show(self, value: Shown) -> None: ...

    def stream(self, markdown: str) -> None: ...

    async def ask(self, question: str) -> str | None:
        return None
