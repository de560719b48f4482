"""A model's answer, or its fault, as the `model_call` event records it, and read back.

Plain JSON, the same whichever ChatModel answered (litellm, the local model, a
scripted one): the text, the tool calls as the model sent them, the finish reason and
the token counts; or the fault's kind and message. The turn writes it (runtime/turn.py);
replay reads it to answer as the model did (replay/recorded.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lily_kernel.errors import ModelError, ModelFault
from lily_kernel.llm.base import ChatResponse, ToolCall, Usage

_CALL_KEYS = ("id", "name", "arguments")  # a tool call as response_record writes it

__all__ = ["error_from_record", "error_record", "messages_problem", "response_from_record",
           "response_problem", "response_record"]


def response_record(response: ChatResponse) -> dict[str, Any]:
    """The `model_call` event's fields for an answer: `response` (text, tool calls) and,
    beside it, the figures the footer shows (token counts, finish reason, cost)."""
    return {
        "response": {
            "text": response.text,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments}
                           for c in response.tool_calls],
        },
        "prompt_tokens": response.usage.prompt_tokens,
        "completion_tokens": response.usage.completion_tokens,
        "finish_reason": response.finish_reason,
        "cost": response.cost,
    }


def response_problem(record: dict[str, Any]) -> str | None:
    """What keeps a recorded `response` from being read back (None: nothing): replay
    checks it before it feeds the answer to the session."""
    text, calls = record.get("text"), record.get("tool_calls")
    if text is not None and not isinstance(text, str):
        return "response.text is not a string"
    if calls is not None and not (isinstance(calls, list) and all(
            isinstance(c, dict) and all(isinstance(c.get(k), str) for k in _CALL_KEYS)
            for c in calls)):
        return "response.tool_calls is not a list of calls with id, name and arguments"
    return None


def messages_problem(messages: Any) -> str | None:
    """What keeps recorded conversation messages (the turn engine's: user, assistant with
    its tool calls, tool results) from being read back; None: nothing."""
    if not isinstance(messages, list):
        return "not a list of messages"
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            return "a message that is not a user's, an assistant's or a tool's"
        content, calls = message.get("content"), message.get("tool_calls")
        if content is not None and not isinstance(content, str):
            return "a message whose content is not text"
        if calls is not None and not (isinstance(calls, list) and all(
                isinstance(c, dict) and isinstance(c.get("id"), str)
                and isinstance(c.get("function"), dict)
                and all(isinstance(c["function"].get(k), str) for k in ("name", "arguments"))
                for c in calls)):
            return "a message whose tool calls are not calls"
        if message["role"] == "tool" and not isinstance(message.get("tool_call_id"), str):
            return "a tool result that names no call"
    return None


_ROLES = ("user", "assistant", "tool")


def response_from_record(fields: Mapping[str, Any]) -> ChatResponse:
    """The answer a `model_call` event's fields recorded (see response_record)."""
    record = fields.get("response") or {}
    return ChatResponse(
        text=str(record.get("text") or ""),
        tool_calls=tuple(ToolCall(str(c["id"]), str(c["name"]), str(c["arguments"]))
                         for c in record.get("tool_calls") or ()),
        usage=Usage(int(fields.get("prompt_tokens") or 0),
                    int(fields.get("completion_tokens") or 0)),
        finish_reason=fields.get("finish_reason"),
        cost=fields.get("cost"),
    )


def error_record(error: ModelError) -> dict[str, str]:
    return {"kind": error.kind.value, "message": str(error)}


def error_from_record(record: dict[str, str]) -> ModelError:
    try:
        fault = ModelFault(str(record.get("kind")))
    except ValueError:  # a kind this Lily does not know: a provider's bad answer
        fault = ModelFault.BAD_RESPONSE
    return ModelError(fault, str(record.get("message")))
