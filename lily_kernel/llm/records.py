"""A model's answer, or its fault, as the `model_call` event records it, and read back.

Plain JSON, the same whichever ChatModel answered (litellm, the local model, a
scripted one): the text, the tool calls as the model sent them, the finish reason and
the token counts; or the fault's kind and message. The turn writes it (runtime/turn.py);
the record reads it to answer as the model did (record/turn_model.py), once checked
against its description (record/shapes.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lily_kernel.errors import ModelError, ModelFault
from lily_kernel.llm.base import ChatResponse, ToolCall, Usage

__all__ = ["error_from_record", "error_record", "response_from_record", "response_record"]


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
