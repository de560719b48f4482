"""A scripted ChatModel for tests: a queue of replies, and a record of every request."""

from __future__ import annotations

import copy
import dataclasses
import re
from collections import deque
from collections.abc import Callable

from lily_kernel.llm.base import ChatRequest, ChatResponse

__all__ = ["ScriptedModel"]


class ScriptedModel:
    """Replies in order; each may be a ChatResponse or an exception to raise."""

    def __init__(
        self,
        *replies: ChatResponse | BaseException,
        name: str = "scripted",
        supports_tools: bool = True,
        context_window: int | None = None,
        reads: int | None = None,
    ) -> None:
        self.name = name
        self.supports_tools = supports_tools
        self.context_window = context_window
        self.reads = reads  # prompt tokens it says it reads anew (as a local model does)
        self.replies: deque[ChatResponse | BaseException] = deque(replies)
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest, on_text: Callable[[str], None]) -> ChatResponse:
        # What the model saw, frozen in time (not the caller's callback).
        self.requests.append(copy.deepcopy(dataclasses.replace(request, on_reading=None)))
        if self.reads is not None and request.on_reading is not None:
            request.on_reading(self.reads)
        if not self.replies:
            raise AssertionError("ScriptedModel has no reply left")
        reply = self.replies.popleft()
        if isinstance(reply, BaseException):
            raise reply
        for piece in re.findall(r"\s*\S+\s*", reply.text):  # streamed word by word
            on_text(piece)
        return reply
