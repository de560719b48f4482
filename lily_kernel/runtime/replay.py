"""Replay a recorded session against the current files, with the recorded model answers.

The log's `session_started` gives the workspace and the LILY_* settings; its `cell`
events give what the person ran. Each cell runs again through a fresh runtime, where
the model is replaced by the recorded `model_call` answers (so no model or key is
needed; a recorded `model_load` ends its cell the same way), the person's answers
by the recorded `approval` events, and skill scripts by their recorded
`skill_script_run` results (replay never runs a script). Everything else
runs for real against the files as they are now: the skill snapshot and its digest,
every command and its output, every tool call and its result. The new event stream
is compared with the recorded one, event by event, after dropping what always differs
(times, sequence numbers, durations).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from lily_kernel.config import CONFIG_FILE
from lily_kernel.errors import ReplayError
from lily_kernel.events import (
    Approval,
    Cell,
    Event,
    EventData,
    ModelCall,
    ModelLoad,
    SkillScriptRun,
    TrustChecked,
    read_event,
)
from lily_kernel.llm.base import ChatRequest, ChatResponse
from lily_kernel.runtime.replay_records import error_from_record, response_from_record
from lily_kernel.runtime.runtime import LilyRuntime
from lily_kernel.tools.sandbox import ScriptPlan, ScriptResult
from lily_kernel.trust import TrustStore, WorkspaceTrust, file_digest

__all__ = ["Divergence", "ReplayError", "ReplayReport", "read_session_log", "replay_session"]

# Fields that differ on every run by nature; never compared.
VOLATILE = frozenset({"latency_ms", "duration_ms"})
Kind = TypeVar("Kind", bound=EventData)


@dataclass(frozen=True)
class Divergence:
    """The first place the replay differs from the recording."""

    index: int  # position in the event stream, from 1
    event: str
    expected: dict[str, Any] | None  # None: the replay produced more events
    actual: dict[str, Any] | None  # None: the replay stopped short

    def describe(self) -> str:
        if self.actual is None:
            return (f"event {self.index} ({self.event}): expected {_show(self.expected)}, "
                    "but the replay produced no more events")
        if self.expected is None:
            return (f"event {self.index} ({self.event}): the recording ends here, but the "
                    f"replay produced {_show(self.actual)}")
        keys = sorted(k for k in set(self.expected) | set(self.actual)
                      if self.expected.get(k) != self.actual.get(k))
        if "event" in keys:
            return (f"event {self.index}: expected a '{self.expected['event']}' event "
                    f"{_show(self.expected)}, the replay produced a '{self.actual['event']}' "
                    f"event {_show(self.actual)}")
        data_e, data_a = self.expected.get("data", {}), self.actual.get("data", {})
        fields = sorted(k for k in set(data_e) | set(data_a) if data_e.get(k) != data_a.get(k))
        lines = [f"event {self.index} ({self.event}) differs in {', '.join(fields)}:"]
        for name in fields:
            lines.append(f"  {name}: expected {_show(data_e.get(name))}")
            lines.append(f"  {' ' * len(name)}  actual   {_show(data_a.get(name))}")
        return "\n".join(lines)


def _show(value: Any, limit: int = 600) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit] + " ..."


@dataclass(frozen=True)
class ReplayReport:
    log: Path
    events: int
    cells: int
    divergence: Divergence | None

    @property
    def identical(self) -> bool:
        return self.divergence is None

    def describe(self) -> str:
        if self.divergence is None:
            return (f"identical: {self.cells} cell(s), {self.events} event(s) replayed "
                    f"from {self.log}")
        return f"divergence at {self.divergence.describe()}"


def read_session_log(path: Path) -> list[dict[str, Any]]:
    """The events of a session log, in order (raises ReplayError with the reason)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReplayError(f"no session log at {path}.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReplayError(f"cannot read {path}: {exc}.") from None
    events = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            raise ReplayError(f"{path}, line {number}: not a JSON event.") from None
        if not isinstance(event, dict) or not isinstance(event.get("data"), dict):
            raise ReplayError(f"{path}, line {number}: not a Lily event.")
        events.append(event)
    if not events or events[0].get("event") != "session_started":
        raise ReplayError(f"{path}: not a Lily session log (it must start with "
                          "session_started).")
    return events


def normalise(event: Mapping[str, Any]) -> dict[str, Any]:
    """What replay compares: the kind and the data, without the volatile fields."""
    data = {k: v for k, v in event.get("data", {}).items() if k not in VOLATILE}
    return {"event": event.get("event"), "data": json.loads(json.dumps(data, default=str))}


class ReplayModel:
    """A ChatModel that answers with the recorded model calls, in order."""

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
            response = response_from_record(call)
            if response.text:
                on_text(response.text)
            return response
        if call.error is not None:
            raise error_from_record(call.error)
        if call.outcome == "cancelled":
            raise asyncio.CancelledError  # the recorded call was interrupted
        raise ReplayError(f"the recorded model call ended with {call.outcome!r}.")


class RecordedLoads:
    """Stands in for making the model: the loads that did not end with a model (failed,
    or a cell stopped while waiting), in order, then the recorded answers (a session's
    model, once made, is kept, so those come first)."""

    def __init__(self, unfinished: list[ModelLoad], model: ReplayModel) -> None:
        self.unfinished = deque(unfinished)
        self.model = model

    def __call__(self) -> ReplayModel:
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

    def show(self, result: object) -> None: ...

    def stream(self, markdown: str) -> None: ...

    def reply(self, markdown: str, footer: str | None = None) -> None: ...

    def notice(self, text: str) -> None: ...

    async def ask(self, prompt: str) -> str | None:
        if not self.approvals:
            raise asyncio.CancelledError  # the recording was interrupted at this question
        outcome = self.approvals.popleft().outcome
        if outcome == "interrupted":
            raise asyncio.CancelledError  # the person pressed stop at this question
        return {"approved": "y", "declined": "n"}.get(outcome)


class RecordedScripts:
    """Stands in for running skill scripts: the recorded results, in order."""

    def __init__(self, runs: list[SkillScriptRun]) -> None:
        self.runs = deque(runs)

    async def __call__(self, plan: ScriptPlan, timeout: float) -> ScriptResult:
        if not self.runs:
            raise ReplayError("the replay ran more skill scripts than were recorded.")
        run = self.runs.popleft()
        if run.outcome == "interrupted":
            raise asyncio.CancelledError
        return ScriptResult(
            exit_code=run.exit_code, duration_ms=0.0, output=run.output or "",
            output_bytes=run.output_bytes or 0, timed_out=run.outcome == "timeout")


def _of(events: list[dict[str, Any]], kind: type[Kind]) -> list[Kind]:
    """The recorded events of one kind, read through its declaration."""
    found = []
    for number, event in enumerate(events, 1):
        if event.get("event") != kind.event:
            continue
        try:
            found.append(read_event(kind, event["data"]))
        except TypeError:  # a field the kind needs is missing
            raise ReplayError(f"event {number} ({kind.event}) lacks a field its kind "
                              "declares: not a log this Lily wrote.") from None
    return found


def _environment(settings: Mapping[str, str]) -> dict[str, str]:
    """This machine's environment with the session's own LILY_* settings."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("LILY_")}
    environ.update({str(k): str(v) for k, v in settings.items()})
    return environ


async def _run_cells(runtime: LilyRuntime, cells: list[str], sink: ReplaySink,
                     before_cell: Callable[[int], None] | None) -> None:
    for index, code in enumerate(cells):
        if before_cell is not None:
            before_cell(index)
        # How the cell ended is in its cell_finished event, compared with the recording;
        # a bug (any other exception) shows up there as a divergence too.
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await runtime.run_cell(code, sink)


def replay_session(path: Path, before_cell: Callable[[int], None] | None = None
                   ) -> ReplayReport:
    """Replay the session recorded at `path`; `before_cell(i)` runs before the i-th cell
    (from 0), for a harness that changes files between cells as the person did."""
    recorded = read_session_log(path)
    started = recorded[0]["data"]
    workspace = Path(str(started.get("workspace", "")))
    if not workspace.is_dir():
        raise ReplayError(f"the session's workspace {workspace} is not a folder here.")
    actual: list[Event] = []
    runtime = LilyRuntime.start(
        workspace, _environment(started.get("settings") or {}),
        session_id=str(recorded[0].get("session_id") or "replay"),
        listener=actual.append, write_log=False,
        trust_store=_recorded_trust(workspace, _of(recorded, TrustChecked)))
    try:
        runtime.model_loader = RecordedLoads(_of(recorded, ModelLoad),
                                             ReplayModel(_of(recorded, ModelCall)))
        runtime.scripts.run = RecordedScripts(_of(recorded, SkillScriptRun))
        cells = [cell.code for cell in _of(recorded, Cell)]
        asyncio.run(_run_cells(runtime, cells, ReplaySink(_of(recorded, Approval)),
                               before_cell))
    finally:
        runtime.close()
    expected = [normalise(e) for e in recorded]
    produced = [normalise(e.as_dict()) for e in actual]
    return ReplayReport(path, len(expected), len(cells), _first_divergence(expected, produced))


def _recorded_trust(workspace: Path, checked: list[TrustChecked]) -> TrustStore:
    """The trust the session started with, in memory: replay asks the store what the
    recording's did (what the person trusts now does not change it), and a trust
    question answered yes in the recording is never written to the person's store."""
    if not checked or checked[0].by != "store":
        return TrustStore(None)
    first = checked[0]
    config = file_digest(workspace / CONFIG_FILE) if first.config_trusted else None
    return TrustStore(None, {str(workspace.resolve()): WorkspaceTrust(
        config, dict(first.trusted_skills))})


def _first_divergence(expected: list[dict[str, Any]], actual: list[dict[str, Any]]
                      ) -> Divergence | None:
    for index in range(max(len(expected), len(actual))):
        want = expected[index] if index < len(expected) else None
        got = actual[index] if index < len(actual) else None
        if want != got:
            kind = str((want or got or {}).get("event"))
            return Divergence(index + 1, kind, want, got)
    return None
