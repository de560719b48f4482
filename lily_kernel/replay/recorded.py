"""The recording's stand-ins: the model, its loads, the person and skill scripts answer
as they did when the session was recorded (replay never asks a model or a person, and
never runs a script)."""

from __future__ import annotations

import asyncio
from collections import deque
from pathlib import Path

from lily_kernel.config import ModelConfig
from lily_kernel.errors import ReplayError
from lily_kernel.events import Approval, ModelLoad, SkillScriptRun
from lily_kernel.execution.runner import ScriptPlan, ScriptResult
from lily_kernel.llm.records import error_from_record
from lily_kernel.record.turn_model import ReplayModel
from lily_kernel.replay.scratch import PathMap

__all__ = ["RecordedLoads", "RecordedScripts", "ReplayModel", "ReplaySink"]


class RecordedLoads:
    """Stands in for making the model: the loads that did not end with a model (failed,
    or a cell stopped while waiting), in order, then the recorded answers (a session's
    model, once made, is kept, so those come first)."""

    def __init__(self, unfinished: list[ModelLoad], model: ReplayModel) -> None:
        self.unfinished = deque(unfinished)
        self.model = model

    def __call__(self, settings: ModelConfig, cache: Path) -> ReplayModel:
        if self.unfinished:
            load = self.unfinished.popleft()
            if load.outcome == "interrupted" or load.error is None:
                raise asyncio.CancelledError  # (the waiting cell ends interrupted)
            raise error_from_record(load.error)
        return self.model


class ReplaySink:
    """Shows nothing; answers questions as the person answered them."""

    def __init__(self, approvals: list[Approval]) -> None:
        self.approvals = deque(approvals)

    def show(self, value: object) -> None: ...

    def stream(self, markdown: str) -> None: ...

    async def ask(self, question: str) -> str | None:
        if not self.approvals:
            raise asyncio.CancelledError  # the recording was interrupted at this question
        outcome = self.approvals.popleft().outcome
        if outcome == "interrupted":
            raise asyncio.CancelledError  # the person pressed stop at this question
        return {"approved": "y", "always": "a", "declined": "n"}.get(outcome)


class RecordedScripts:
    """Stands in for running skill scripts: the recorded results, in order."""

    def __init__(self, runs: list[SkillScriptRun], paths: PathMap | None = None) -> None:
        self.runs = deque(runs)
        self.paths = paths  # the recorded workspace's path, said as the copy's

    async def __call__(self, plan: ScriptPlan, timeout: float) -> ScriptResult:
        if not self.runs:
            raise ReplayError("the replay ran more skill scripts than were recorded.")
        run = self.runs.popleft()
        if run.outcome == "interrupted":
            raise asyncio.CancelledError
        output = run.output or ""
        return ScriptResult(
            exit_code=run.exit_code, duration_ms=0.0,
            output=self.paths.to_scratch(output) if self.paths is not None else output,
            output_bytes=run.output_bytes or 0, timed_out=run.outcome == "timeout")
