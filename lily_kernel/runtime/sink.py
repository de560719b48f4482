"""Where a cell's output goes: the kernel adapter implements it, tests record with it."""

from __future__ import annotations

from typing import Protocol

from lily_kernel.commands import CommandResult
from lily_kernel.display import Code, RunOutput

__all__ = ["CellSink", "SilentSink"]


class CellSink(Protocol):
    """One cell's output, and the person's answers to its questions."""

    def show(self, result: CommandResult) -> None: ...

    def stream(self, markdown: str) -> None:
        """The reply so far, while it streams."""

    def reply(self, markdown: str, footer: str | None = None) -> None:
        """The finished reply, and a quiet one-line footer under it (None: none)."""

    def notice(self, text: str) -> None: ...

    def output(self, item: Code | RunOutput) -> None:
        """Code that runs, and each of its outputs as it comes (display/runs.py)."""

    async def ask(self, prompt: str) -> str | None:
        """The person's answer to a yes/no question (Jupyter's input request); None
        when no one can answer (nbclient, papermill, a frontend without stdin)."""


class SilentSink:
    """A cell sink that shows nothing and where no one answers (as under nbclient): for
    runs no one watches, `lily eval`'s sessions, benchmarks and tests; `nobody`, why no
    one answers, where that is not a notebook's runner (an MCP client's call)."""

    def __init__(self, nobody: str | None = None) -> None:
        self.nobody = nobody

    def show(self, result: CommandResult) -> None: ...

    def stream(self, markdown: str) -> None: ...

    def reply(self, markdown: str, footer: str | None = None) -> None: ...

    def notice(self, text: str) -> None: ...

    def output(self, item: Code | RunOutput) -> None: ...

    async def ask(self, prompt: str) -> str | None:
        return None
