"""Who does for the runtime what it does not do itself: one value, given at start; and
the seam of the session's record (the turns answered again from it, replay/)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from lily_kernel.commands import CommandResult
from lily_kernel.commands.record import ConversationBook, ConversationChange
from lily_kernel.config import ModelConfig
from lily_kernel.display import render_plain
from lily_kernel.execution.runner import ScriptPlan, ScriptResult, run_script
from lily_kernel.llm.base import ChatModel
from lily_kernel.runtime.sink import CellSink

__all__ = ["Collaborators", "SessionRecord", "TurnFacts", "TurnPlan"]


def _create_model(settings: ModelConfig, cache: Path) -> ChatModel:
    from lily_kernel.llm import create_model  # litellm or llama.cpp: with the first chat cell

    return create_model(settings, cache)


@dataclass(frozen=True)
class TurnFacts:
    """A chat turn before it runs, as the runtime knows it: the request (and the skill
    the person forced), the cell, and whether the model must answer it (/rerun)."""

    text: str
    forced: str | None
    code: str
    cell_id: str | None
    fresh: bool = False  # /rerun: never from the record
    rerun: bool = False  # /rerun without a message: it replaces the last turn


class TurnPlan(Protocol):
    """One turn as the record plans it: the history it continues (None: the session's),
    its model (the record's answers, then the live one), what is kept once it ran."""

    history: list[dict[str, Any]] | None

    async def model(self, live: Callable[[], Awaitable[ChatModel]]) -> ChatModel: ...

    def finished(self, messages: list[dict[str, Any]], stopped: bool) -> None: ...


class SessionRecord(ConversationBook, Protocol):
    """The session's record (replay/answers.py): plans each chat turn, and writes down
    where a conversation begins (/new, /resume)."""

    async def plan(self, facts: TurnFacts, sink: CellSink) -> TurnPlan: ...

    def started(self, change: ConversationChange) -> None: ...


@dataclass(frozen=True)
class Collaborators:
    """Who does what the runtime does not do itself, given at start: makes the session's
    model (its settings; a folder for the local model's cache), runs a skill script,
    reads what a command showed as plain text, digested into its `command` event, keeps
    the session's record (None: none). Replay gives the recording's (replay/run.py)."""

    make_model: Callable[[ModelConfig, Path], ChatModel] = _create_model
    run_script: Callable[[ScriptPlan, float], Awaitable[ScriptResult]] = run_script
    shown: Callable[[CommandResult], str] = render_plain
    # Made with the runtime once it has started (a LilyRuntime: runtime.py imports this).
    record: Callable[[Any], SessionRecord] | None = None
