"""Turn Lily's results into Jupyter messages: rich displays, streamed replies, errors.

Everything here is plain data: `KernelSink` sends through a callable, and the error
contents are dictionaries, so the kernel class stays a thin adapter.
"""

from __future__ import annotations

import traceback
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any

from lily_kernel.errors import LilyError
from lily_kernel.visible import visible

if TYPE_CHECKING:
    from lily_kernel.runtime import CommandResult

__all__ = [
    "CellError",
    "KernelSink",
    "Send",
    "command_bundle",
    "markdown_bundle",
    "no_answer",
    "notice_bundle",
]

Send = Callable[[str, dict[str, Any]], None]
"""Publish one iopub message: `send(msg_type, content)`."""

Ask = Callable[[str], Awaitable[str | None]]
"""Ask the person a question through the stdin channel; None when no one can answer."""


async def no_answer(prompt: str) -> None:
    """The ask of a cell no one can answer (a silent execution)."""
    return


def command_bundle(result: CommandResult) -> dict[str, str]:
    """A command result in the three formats every frontend can pick from."""
    # Imported here: the kernel loads the command layer off its start-up path.
    from lily_kernel.runtime import render_result

    return render_result(result)


def markdown_bundle(markdown: str, footer: str | None = None) -> dict[str, str]:
    """A model reply: Markdown rendered by the notebook, the same text for consoles;
    the footer as a small line under it."""
    if footer is None:
        return {"text/markdown": markdown, "text/plain": markdown}
    # An answer cut off inside a code block would show the footer as code: close it.
    closed = markdown + "\n```" if markdown.count("```") % 2 else markdown
    return {
        "text/markdown": f"{closed}\n\n<sub>{escape(footer)}</sub>",
        "text/plain": f"{markdown}\n\n-- {footer}",
    }


def notice_bundle(text: str) -> dict[str, str]:
    """A small remark for the person (e.g. a truncated persona file). Its paths and names
    come from the folder: the plain text (what `jupyter console` prints) shows their
    escape codes, never obeys them."""
    return {
        "text/html": f'<div class="lily-notice"><em>{escape(text)}</em></div>',
        "text/plain": visible(text, lines=True),
    }


class KernelSink:
    """The kernel's CellSink: one cell's output, as display messages on iopub.

    A streamed reply is one display updated in place: the first `stream` creates it
    under a display id fresh for this cell, later calls and the final `reply` update it.
    """

    def __init__(self, send: Send, ask: Ask = no_answer) -> None:
        self._send = send
        self._ask = ask
        self._display_id: str | None = None

    async def ask(self, prompt: str) -> str | None:
        return await self._ask(prompt)

    def show(self, result: CommandResult) -> None:
        self._display(command_bundle(result))

    def stream(self, markdown: str) -> None:
        self._update_or_create(markdown)

    def reply(self, markdown: str, footer: str | None = None) -> None:
        self._update_or_create(markdown, footer)

    def notice(self, text: str) -> None:
        self._display(notice_bundle(text))

    def _display(self, data: dict[str, str], transient: dict[str, str] | None = None) -> None:
        self._send("display_data", {"data": data, "metadata": {}, "transient": transient or {}})

    def _update_or_create(self, markdown: str, footer: str | None = None) -> None:
        data = markdown_bundle(markdown, footer)
        if self._display_id is None:
            self._display_id = f"lily-{uuid.uuid4().hex}"
            self._display(data, {"display_id": self._display_id})
        else:
            self._send("update_display_data", {
                "data": data, "metadata": {}, "transient": {"display_id": self._display_id},
            })


@dataclass(frozen=True)
class CellError:
    """A failed cell as Jupyter shows it: a short name, the message, the traceback lines."""

    ename: str
    evalue: str
    traceback: tuple[str, ...]

    @classmethod
    def from_lily(cls, error: LilyError) -> CellError:
        """A user error: `Error: <its message>` is the whole story, no Python traceback."""
        message = f"Error: {error}"
        return cls(type(error).__name__, message, (message,))

    @classmethod
    def from_bug(cls, error: BaseException) -> CellError:
        """Anything else is a bug in Lily: keep the traceback for the report."""
        lines = "".join(traceback.format_exception(error)).rstrip("\n").split("\n")
        return cls(type(error).__name__, str(error), tuple(lines))

    @classmethod
    def interrupted(cls) -> CellError:
        return cls("KeyboardInterrupt", "the cell was interrupted",
                   ("KeyboardInterrupt: the cell was interrupted",))

    def content(self) -> dict[str, Any]:
        return {"ename": self.ename, "evalue": self.evalue, "traceback": list(self.traceback)}
