"""The replay of one turn: the model a turn talks to when the record has it.

`TurnModel` stands in for the session's model for one turn. While each request is the
one recorded at that step (the same digest: the tool results the turn's recorded calls
gave again, under today's policy, are those of the record), the recorded answer is
given, with no model call; at the first request that differs, the live model answers,
from there to the end of the turn, and the record says so. Every step, replayed or
not, is written down for the turn's own record. With no recorded steps it only writes
them down: a turn the model answers.

The same engine replays a turn for the kernel (Run All, the record's steps) and for
`lily replay` (the log's own answers, the step where the recording diverged fed back).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any

from lily_kernel.errors import ReplayError
from lily_kernel.events import ModelCall
from lily_kernel.events.turns import TurnSource
from lily_kernel.llm.base import ChatModel, ChatRequest, ChatResponse
from lily_kernel.llm.records import error_from_record, response_from_record, response_record
from lily_kernel.record.shapes import Step

__all__ = ["Replay", "ReplayModel", "TurnModel", "recorded_calls"]


@dataclass
class Replay:
    """How a turn is answered from the record: `answering`, the recorded answers in
    order; `matches(step, digest)`, whether the request of a step (from 0) is the
    recorded one; told when the first recorded answer is given (`on_replayed`) and at
    the step (from 1) the live model takes over (`on_diverged`)."""

    answering: ChatModel
    matches: Callable[[int, str], bool]
    on_replayed: Callable[[], None]
    on_diverged: Callable[[int], None]


def recorded_calls(steps: list[Step]) -> list[ModelCall]:
    """A turn record's steps as the `model_call`s replay's model answers with."""
    return [ModelCall(model=s.model, step=n, outcome="ok", latency_ms=0.0,
                      context_window=s.context_window, supports_tools=s.supports_tools,
                      response=asdict(s.response), prompt_tokens=s.prompt_tokens,
                      completion_tokens=s.completion_tokens,
                      finish_reason=s.finish_reason, cost=s.cost)
            for n, s in enumerate(steps, 1)]


class ReplayModel:
    """A ChatModel that answers with the recorded model calls, in order (a turn's steps
    from the record; `lily replay`'s log)."""

    def __init__(self, calls: list[ModelCall]) -> None:
        self.calls = deque(calls)
        self.name = calls[0].model if calls else "replay"
        # As the recorded model: whether it called tools (else a selection step runs),
        # and its context window (the catalog budget and history trimming follow it).
        self.supports_tools = calls[0].supports_tools if calls else True
        windows = [c.context_window for c in calls if c.context_window]
        self._context_window: int | None = int(windows[0]) if windows else None

    @property
    def context_window(self) -> int | None:
        return self._context_window

    async def complete(self, request: ChatRequest,
                       on_text: Callable[[str], None]) -> ChatResponse:
        if not self.calls:
            raise ReplayError("the replay asked the model for more answers than were recorded.")
        call = self.calls.popleft()
        self.name = call.model
        self.supports_tools = call.supports_tools
        if call.response is not None:
            response = response_from_record(call.as_data())
            if response.text:
                on_text(response.text)
            return response
        if call.error is not None:
            raise error_from_record(call.error)
        if call.outcome == "cancelled":
            raise asyncio.CancelledError  # the recorded call was interrupted
        raise ReplayError(f"the recorded model call ended with '{call.outcome}'.")


class TurnModel:
    """A ChatModel for one turn: the record's answers while the requests match, then
    the live model (`live`, made on first need); `steps` what each call was asked
    (digest) and answered, `source` who answered."""

    def __init__(self, digest: Callable[[ChatRequest], str],
                 live: Callable[[], Awaitable[ChatModel]], answering: ChatModel,
                 replay: Replay | None = None) -> None:
        self.digest, self.live, self.replay = digest, live, replay
        self.answering = answering
        self.steps: list[dict[str, Any]] = []
        self.replayed = 0  # steps answered from the record
        self.diverged = False

    @property
    def name(self) -> str:
        return self.answering.name

    @name.setter
    def name(self, value: str) -> None:  # (ChatModel's are plain attributes)
        self.answering.name = value

    @property
    def supports_tools(self) -> bool:
        return self.answering.supports_tools

    @supports_tools.setter
    def supports_tools(self, value: bool) -> None:
        self.answering.supports_tools = value

    @property
    def context_window(self) -> int | None:
        return self.answering.context_window

    @property
    def source(self) -> TurnSource:
        if self.replay is None or self.replayed == 0:
            return "model"
        return "diverged" if self.diverged else "record"

    async def complete(self, request: ChatRequest,
                       on_text: Callable[[str], None]) -> ChatResponse:
        digest = self.digest(request)
        if self.replay is not None and not self.diverged:
            if self.replay.matches(len(self.steps), digest):
                if self.replayed == 0:
                    self.replay.on_replayed()
                self.replayed += 1
                return self._kept(digest, await self.answering.complete(request, on_text))
            self.diverged = True
            self.replay.on_diverged(len(self.steps) + 1)
            self.answering = await self.live()
        return self._kept(digest, await self.answering.complete(request, on_text))

    def _kept(self, digest: str, response: ChatResponse) -> ChatResponse:
        model = self.answering
        self.steps.append({"request": digest, "model": model.name,
                           "context_window": model.context_window,
                           "supports_tools": model.supports_tools,
                           **response_record(response)})
        return response
