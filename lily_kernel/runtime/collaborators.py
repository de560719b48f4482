"""Who does for the runtime what it does not do itself: one value, given at start; the
session's record among them (its seam: record/seam.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from lily_kernel.commands import CommandResult
from lily_kernel.config import ModelConfig
from lily_kernel.display import render_plain
from lily_kernel.execution.runner import ScriptPlan, ScriptResult, run_script
from lily_kernel.llm.base import ChatModel
from lily_kernel.record.seam import (
    Emit,
    MakeRecord,
    RecordOpening,
    SessionRecord,
    TurnFacts,
    TurnPlan,
)

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
    run_script: Callable[[ScriptPlan, float], Awaitable[ScriptResult]] = run_script
    shown: Callable[[CommandResult], str] = render_plain
    # Made once the session has started, from its opening and its log's emit.
    record: MakeRecord | None = None


def _notebook_record(opening: RecordOpening, emit: Emit) -> SessionRecord:
    from lily_kernel.record.answers import NotebookRecord  # in the session's start thread

    return NotebookRecord(opening, emit)


# The kernel's: its turns recorded, and answered from the record (docs/sessions.md).
RECORDED = Collaborators(record=_notebook_record)
