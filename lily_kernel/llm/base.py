"""The model seam: what the runtime sends a model and what it gets back.

`ChatModel` is the one interface; `LiteLLMModel` implements it for real providers and
`ScriptedModel` for tests. Both speak OpenAI-format messages and tool schemas.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["ChatModel", "ChatRequest", "ChatResponse", "ToolCall", "Usage"]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as the model produced it (may be invalid)


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class ChatRequest:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    # A JSON schema the answer must follow (structured skill selection), or None.
    json_schema: dict[str, Any] | None = None
    max_tokens: int | None = None  # for this call only; the model's setting otherwise
    # Told, before a model that reads the prompt on this machine does so, how many of
    # its tokens it reads anew (a long one takes seconds: the person is told).
    on_reading: Callable[[int], None] | None = None


@dataclass(frozen=True)
class ChatResponse:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    finish_reason: str | None = None
    cost: float | None = None  # in USD, where known (0.0 for a local model)


class ChatModel(Protocol):
    """One model call. `on_text` receives each text delta as it arrives (streaming).

    `supports_tools`: whether the model can call tools; when it cannot, a skill is
    selected by a structured declaration instead (`ChatRequest.json_schema`).
    `context_window`: tokens the model reads at most, None when unknown.
    """

    name: str
    supports_tools: bool

    @property
    def context_window(self) -> int | None: ...

    async def complete(
        self, request: ChatRequest, on_text: Callable[[str], None]
    ) -> ChatResponse: ...
