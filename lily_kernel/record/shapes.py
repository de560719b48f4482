"""What a record holds, typed: a model's recorded answer, each step of a turn, each
message of a conversation (docs/sessions.md). A record is data (a log can be crafted):
it is read through these descriptions with `validation.build`, and what does not fit
is not replayed, nor taken up.

Plain dataclasses, like the event kinds: nothing here loads with more than the kernel's
start (no pydantic)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from lily_kernel.validation import ShapeError, build

__all__ = ["RecordedCall", "RecordedMessage", "RecordedResponse", "Step", "TakenTurn",
           "read_messages", "read_steps"]


@dataclass(frozen=True)
class RecordedCall:
    """A tool call in a model's answer, as `response_record` writes it."""

    unknown_keys: ClassVar[str] = "ignore"
    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class RecordedResponse:
    """A model's answer as the record keeps it: its text and its tool calls."""

    unknown_keys: ClassVar[str] = "ignore"
    text: str | None = None
    tool_calls: list[RecordedCall] | None = None


@dataclass(frozen=True)
class Step:
    """One model call of a recorded turn: the request's digest, who answered, and the
    answer with the figures the footer shows (as a `model_call` holds them)."""

    request: str
    model: str
    response: RecordedResponse
    context_window: int | None = None
    supports_tools: bool = True
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    cost: float | None = None


@dataclass(frozen=True)
class RecordedFunction:
    unknown_keys: ClassVar[str] = "ignore"
    name: str
    arguments: str


@dataclass(frozen=True)
class RecordedToolCall:
    """A tool call in an assistant's message, as the turn engine writes it."""

    unknown_keys: ClassVar[str] = "ignore"
    id: str
    function: RecordedFunction


@dataclass(frozen=True)
class RecordedMessage:
    """A conversation message as the turn engine writes it: the person's, the
    assistant's (with its tool calls), a tool's result (naming its call)."""

    role: Literal["user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[RecordedToolCall] | None = None
    tool_call_id: str | None = None


@dataclass(frozen=True)
class TakenTurn:
    """A turn a conversation took up, as its `conversation` event lists it (its
    messages read on their own: read_messages)."""

    code: str
    text: str
    messages: list[dict[str, Any]]
    cell_id: str | None = None


def read_steps(value: Any) -> list[Step] | None:
    """A recorded turn's steps, each checked; None when there are none, or one is not a
    step (a crafted record is refused whole, not half-replayed)."""
    if not isinstance(value, list) or not value:
        return None
    try:
        return [build(Step, step) if isinstance(step, dict) else _not_a_step(step)
                for step in value]
    except ShapeError:
        return None


def _not_a_step(value: Any) -> Step:
    raise ShapeError("steps", "a mapping", value)


def read_messages(value: Any) -> list[dict[str, Any]] | None:
    """Recorded conversation messages, as the history takes them (the model's API's
    mappings), once each reads as a message; None when one does not."""
    if not isinstance(value, list):
        return None
    try:
        for message in value:
            if not isinstance(message, dict):
                return None
            read = build(RecordedMessage, message)
            if read.role == "tool" and read.tool_call_id is None:
                return None  # a tool's result that names no call
    except ShapeError:
        return None
    return value
