"""Who does for the runtime what it does not do itself: one value, given at start; the
session's record among them (its seam: record/seam.py)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lily_kernel.commands import CommandResult, Conversation, ConversationChange
from lily_kernel.config import ModelConfig
from lily_kernel.display import render_plain
from lily_kernel.record.seam import (
    Emit,
    MakeRecord,
    RecordOpening,
    SessionRecord,
    Tell,
    TurnFacts,
    TurnInputs,
    TurnPlan,
)

if TYPE_CHECKING:  # the model seam loads with the first chat cell, the runner with a run
    from lily_kernel.execution.runner import ScriptPlan, ScriptResult
    from lily_kernel.llm.base import ChatModel

__all__ = ["RECORDED", "Collaborators", "SessionRecord", "TurnFacts", "TurnPlan"]


def _create_model(settings: ModelConfig, cache: Path) -> ChatModel:
    from lily_kernel.llm import create_model  # litellm or llama.cpp: with the first chat cell

    return create_model(settings, cache)


@dataclass(frozen=True)
class Collaborators:
    """Who does what the runtime does not do itself, given at start: makes the session's
    model (its settings; a folder for the local model's cache), runs a skill script,
    reads what a command showed as plain text, digested into its `command` event, keeps
    the session's record (None: none). Replay gives the recording's (replay/run.py)."""

    make_model: Callable[[ModelConfig, Path], ChatModel] = _create_model
    run_script: Callable[[ScriptPlan, float], Awaitable[ScriptResult]] | None = None  # real runs
    shown: Callable[[CommandResult], str] = render_plain
    # Made once the session has started, from its opening and its log's emit.
    record: MakeRecord | None = None


class _RecordOnFirstUse:
    """The notebook's record (record/answers.py), made with its first use (a chat turn,
    /new, /resume; commands only hold it) from the opening taken as the session started:
    the record's modules and the workspace's index are not on the kernel's start path."""

    def __init__(self, opening: RecordOpening, emit: Emit) -> None:
        self._opening, self._emit = opening, emit
        self._record: SessionRecord | None = None
        self._making = threading.Lock()

    def _made(self) -> SessionRecord:
        with self._making:
            if self._record is None:
                from lily_kernel.record.answers import NotebookRecord

                self._record = NotebookRecord(self._opening, self._emit)
            return self._record

    async def plan(self, inputs: TurnInputs, notice: Tell) -> TurnPlan:
        # Made off the event loop: it reads the workspace's index.
        record = await asyncio.to_thread(self._made)
        return await record.plan(inputs, notice)

    def started(self, change: ConversationChange) -> None:
        self._made().started(change)

    def conversations(self) -> list[Conversation]:
        return self._made().conversations()

    def resume(self, wanted: str) -> ConversationChange:
        return self._made().resume(wanted)


def _notebook_record(opening: RecordOpening, emit: Emit) -> SessionRecord:
    return _RecordOnFirstUse(opening, emit)


# The kernel's: its turns recorded, and answered from the record (docs/sessions.md).
RECORDED = Collaborators(record=_notebook_record)
