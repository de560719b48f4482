"""Turn Lily's results into Jupyter messages: rich displays, streamed replies, errors.

What a display holds is rendered by `lily_kernel.display` (the one place output is
formatted); here it becomes messages, sent through a callable, and the error contents
are dictionaries, so the kernel class stays a thin adapter.
"""

from __future__ import annotations

import traceback
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lily_kernel.errors import LilyError

if TYPE_CHECKING:
    from lily_kernel.display import Shown

__all__ = ["CellError", "KernelSink", "Send", "no_answer", "redacted"]

Send = Callable[[str, dict[str, Any]], None]
"""Publish one iopub message: `send(msg_type, content)`."""

Ask = Callable[[str], Awaitable[str | None]]
"""Ask the person a question through the stdin channel; None when no one can answer."""


def redacted(content: dict[str, Any], redact: Callable[[Any], Any]) -> dict[str, Any]:
    """A message's content with every credential masked (`redact`: the Redactor's
    `data`), and HTML the mask changed cleaned again: a mask knows nothing of markup and
    may swallow an attribute's closing quote, which would make text of the answer an
    attribute (`onerror=…`) of the element before it."""
    done: dict[str, Any] = redact(content)
    before, after = content.get("data"), done.get("data")
    if isinstance(before, dict) and isinstance(after, dict) and \
            after.get("text/html") != before.get("text/html"):
        from lily_kernel.display.markup import clean_again

        after["text/html"] = clean_again(str(after["text/html"]))
    return done


async def no_answer(question: str) -> None:
    """The ask of a cell no one can answer (a silent execution)."""
    return


class KernelSink:
    """The kernel's CellSink: one cell's output, as display messages on iopub.

    A streamed reply is one display updated in place: the first `stream` creates it
    under a display id fresh for this cell, later calls and the finished `Reply` update
    it; after a `Reply` the next `stream` starts a display of its own (the model's words
    after a tool ran come under that tool's output). A run's output is the message a
    notebook shows it with (a stream, a display); every other value is one display of
    its bundle.
    """

    def __init__(self, send: Send, ask: Ask = no_answer) -> None:
        self._send = send
        self._ask = ask
        self._display_id: str | None = None

    async def ask(self, question: str) -> str | None:
        return await self._ask(question)

    def show(self, value: Shown) -> None:
        # display/ with the first output, not at start
        from lily_kernel.display import Reply, RunOutput, bundle

        if isinstance(value, RunOutput):
            from lily_kernel.display.runs import output_message

            self._send(*output_message(value))
        elif isinstance(value, Reply):
            self._update_or_create(bundle(value))
            self._display_id = None
        else:
            self._display(bundle(value))

    def stream(self, markdown: str) -> None:
        from lily_kernel.display import Reply, bundle

        self._update_or_create(bundle(Reply(markdown)))

    def _display(self, data: dict[str, str], transient: dict[str, str] | None = None) -> None:
        self._send("display_data", {"data": data, "metadata": {}, "transient": transient or {}})

    def _update_or_create(self, data: dict[str, str]) -> None:
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
        """The error message's content; what a console prints of it obeys no escape code
        (a message may quote a file or a provider's words)."""
        from lily_kernel.visible import visible_prose

        return {"ename": self.ename, "evalue": visible_prose(self.evalue),
                "traceback": [visible_prose(line) for line in self.traceback]}
