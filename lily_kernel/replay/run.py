"""Replay a recorded session against the current files, with the recorded model answers.

The log's `session_started` gives the workspace; its `cell` events give what the person
ran. The cells run again, one at a time, through a fresh runtime in a scratch copy of
the workspace (scratch.py: the person's folder is never written), with this
machine's environment and the current lily.yaml: the log's recorded LILY_* settings are
compared, never applied. The model is replaced by the recorded `model_call` answers (so
no model or key is needed; a recorded `model_load` ends its cell the same way), the
person's answers by the recorded `approval` events, the trust store by the recorded
`trust_checked`, skill scripts by their recorded `skill_script_run` results (replay
never runs a script), and what the session's record decided (a turn answered from it, a
conversation taken up) by the log's own account of it (logged.py). Everything else runs
for real against the files as they are now: the skill snapshot and its digest, every
command and its output, every tool call and its result. Each new event is compared with
the recorded one as it comes, after dropping what always differs (times, sequence
numbers, durations); at the first difference the cell stops and no further cell runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from lily_kernel.commands import CommandResult
from lily_kernel.config import CONFIG_FILE
from lily_kernel.display import render_plain
from lily_kernel.errors import LilyError, ReplayError
from lily_kernel.events import (
    Approval,
    Cell,
    EventData,
    ModelCall,
    ModelLoad,
    SkillScriptRun,
    TrustChecked,
)
from lily_kernel.replay.comparison import Comparison, Divergence
from lily_kernel.replay.log import printable, read_session_log
from lily_kernel.replay.logged import RECORD_KINDS, LoggedRecord, cell_records
from lily_kernel.replay.recorded import RecordedLoads, RecordedScripts, ReplayModel, ReplaySink
from lily_kernel.replay.scratch import PathMap, scratch_copy
from lily_kernel.runtime.collaborators import Collaborators
from lily_kernel.runtime.runtime import LilyRuntime
from lily_kernel.skills.digest import file_digest, folder_digest
from lily_kernel.trust import PERSONA_FOLDER, TrustStore, WorkspaceTrust
from lily_kernel.trust.record import is_record_line
from lily_kernel.validation import ShapeError, build

__all__ = ["ReplayReport", "replay_session"]

Kind = TypeVar("Kind", bound=EventData)


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


def _of(events: list[dict[str, Any]], kind: type[Kind]) -> list[Kind]:
    """The recorded events of one kind, read through its declaration (their fields'
    types were checked as the log was read)."""
    found = []
    for number, event in enumerate(events, 1):
        if event.get("event") != kind.event:
            continue
        try:
            found.append(build(kind, event["data"]))
        except ShapeError:  # a field the kind needs is missing
            raise ReplayError(f"event {number} ({kind.event}) lacks a field its kind "
                              "declares: not a log this Lily wrote.") from None
    return found


def _shown_as_recorded(paths: PathMap) -> Callable[[CommandResult], str]:
    """What a command shows, as plain text for its digest (`output_sha256`), with the
    recorded workspace's paths: as the recording showed it (a table's width follows its
    longest path, so the copy's paths cannot be mapped back in the shown text). The
    command's state change keeps the copy's paths: the session goes on reading the copy."""

    def shown(result: CommandResult) -> str:
        return render_plain(replace(result, title=paths.to_recorded(result.title),
                                    blocks=paths.to_recorded(result.blocks),
                                    notices=paths.to_recorded(result.notices)))
    return shown


async def _run_cells(runtime: LilyRuntime, cells: list[Cell], sink: ReplaySink,
                     comparison: Comparison, before_cell: Callable[[int], None]) -> None:
    """The cells one at a time, none after the first divergence; a divergence within a
    cell stops it there (as the stop button would)."""
    loop = asyncio.get_running_loop()
    for index, recorded in enumerate(cells):
        if comparison.divergence is not None:
            return
        before_cell(index)
        if isinstance(runtime.record, LoggedRecord):
            runtime.record.cell = index  # the record's decisions in this cell, fed back
        cell = asyncio.ensure_future(runtime.run_cell(recorded.code, sink, recorded.cell_id))
        comparison.stop = functools.partial(_stop, loop, cell)
        # How the cell ended is in its cell_finished event, compared with the recording;
        # a bug (any other exception) shows up there as a divergence too.
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await cell
        comparison.stop = None


def _stop(loop: asyncio.AbstractEventLoop, cell: asyncio.Future[None]) -> None:
    """Stop the cell at the event that diverged: raised where it was emitted, before the
    cell does anything more (a cancel alone lands at the next await, when a tool may
    already be running in its thread), and the cell cancelled besides, should some
    code between here and that await swallow it."""
    loop.call_soon_threadsafe(cell.cancel)
    raise asyncio.CancelledError


def replay_session(path: Path, before_cell: Callable[[int, Path], None] | None = None,
                   environ: Mapping[str, str] | None = None) -> ReplayReport:
    """Replay the session recorded at `path` in a scratch copy of its workspace, with
    `environ` (this process's environment unless given) and the current files.
    `before_cell(i, folder)` runs before the i-th cell (from 0), for a harness that
    changes the files of `folder` (the copy) between cells as the person did."""
    recorded = read_session_log(path)
    workspace = _recorded_workspace(recorded[0]["data"])
    cells = _of(recorded, Cell)
    trust = _of(recorded, TrustChecked)
    loads, calls = _of(recorded, ModelLoad), _of(recorded, ModelCall)
    scripts, approvals = _of(recorded, SkillScriptRun), _of(recorded, Approval)
    with scratch_copy(workspace) as scratch:
        paths = PathMap(str(scratch), str(recorded[0]["data"]["workspace"]))
        comparison = Comparison(recorded, paths)
        decided = cell_records(recorded)
        # A session that kept a record (the kernel's) replays with the log's own; one
        # that kept none (a log of before, a session run in process) with none.
        kept = any(e["event"] in RECORD_KINDS for e in recorded)
        recording = Collaborators(make_model=RecordedLoads(loads, ReplayModel(calls)),
                                  run_script=RecordedScripts(scripts, paths),
                                  shown=_shown_as_recorded(paths),
                                  record=(lambda opening, emit:
                                          LoggedRecord(opening, emit, decided))
                                  if kept else None)
        runtime = _start(scratch, dict(os.environ if environ is None else environ),
                         str(recorded[0].get("session_id") or "replay"), comparison,
                         _recorded_trust(scratch, trust), recording, paths)
        try:
            asyncio.run(_run_cells(
                runtime, cells, ReplaySink(approvals), comparison,
                lambda index: before_cell(index, scratch) if before_cell else None))
        finally:
            runtime.close()
    return ReplayReport(path, len(recorded), len(cells), comparison.finish())


def _start(scratch: Path, environ: dict[str, str], session_id: str, comparison: Comparison,
           trust: TrustStore, recording: Collaborators, paths: PathMap) -> LilyRuntime:
    """The session as it starts in the copy, with the recording's collaborators; its
    first events are compared already."""
    try:
        return LilyRuntime.start(scratch, environ, session_id=session_id,
                                 listener=comparison, write_log=False, trust_store=trust,
                                 collaborators=recording)
    except LilyError as exc:  # the current lily.yaml is broken, a root unreadable, ...
        raise ReplayError(f"the session cannot start here: {paths.to_recorded(str(exc))}"
                          ) from None


def _recorded_workspace(started: Mapping[str, Any]) -> Path:
    """The recorded workspace, as a folder here (raises ReplayError)."""
    recorded = started.get("workspace")
    if not isinstance(recorded, str) or not recorded:
        raise ReplayError("the session log names no workspace.")
    workspace, shown = Path(recorded), printable(recorded)
    if not workspace.is_absolute():
        raise ReplayError(f"the session's workspace {shown} is not an absolute path.")
    if not workspace.is_dir():
        raise ReplayError(f"the session's workspace {shown} is not a folder here.")
    return workspace.resolve()


def _recorded_trust(workspace: Path, checked: list[TrustChecked]) -> TrustStore:
    """The trust the session started with, in memory: replay asks the store what the
    recording's did (what the person trusts now does not change it), and a trust
    question answered yes in the recording is never written to the person's store. The
    folder's record of turns, which the copy leaves out, as the recording's question
    named it (trust/record.py)."""
    if not checked:
        return TrustStore(None)
    first = checked[0]
    if first.by != "store":
        record = next(filter(is_record_line, first.held_settings), None)
        return TrustStore(None, records={str(workspace.resolve()): record})
    config = file_digest(workspace / CONFIG_FILE) if first.config_trusted else None
    persona = workspace / PERSONA_FOLDER
    persona_held = any(line.startswith(f"{PERSONA_FOLDER}/") for line in first.held_settings)
    trusted_persona = (folder_digest(str(persona))
                       if persona.is_dir() and not persona_held else None)
    return TrustStore(None, {str(workspace.resolve()): WorkspaceTrust(
        config, dict(first.trusted_skills), trusted_persona)})
