"""The session's structured event log: JSON Lines, one file per session, flushed per event.

Each kind of event is declared once below, as a frozen dataclass whose fields are the
event's data (names and types): `EventLog.emit` writes one, and replay reads them back
through the same declaration (`validation.build`, which checks every field's type). A
field a kind does not declare cannot be emitted (the dataclass refuses it, and mypy sees
every emit site). What a field may say is a type too: a `Literal` (the outcomes below) or
the enum of the layer that decides it (`ModelFault`, `DiagnosticKind`), written as its
value.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, ClassVar, Literal

from lily_kernel.errors import ModelFault
from lily_kernel.skills.models import DiagnosticKind

__all__ = [
    "EVENT_KINDS",
    "KINDS",
    "Answer",
    "Approval",
    "CallOutcome",
    "Caller",
    "Cell",
    "CellFinished",
    "CellStatus",
    "Command",
    "DecidedBy",
    "Event",
    "EventData",
    "EventLog",
    "InvokedBy",
    "LoadOutcome",
    "ModelCall",
    "ModelLoad",
    "ScriptOutcome",
    "SelectionOutcome",
    "SessionStarted",
    "SkillCatalogUpdated",
    "SkillFileRead",
    "SkillInvoked",
    "SkillLoaded",
    "SkillScriptRun",
    "SkillSelection",
    "SkillWarning",
    "ToolCalled",
    "TrustChecked",
    "TrustDecided",
    "TrustedBy",
    "keep_out_of_git",
    "session_log_path",
]

KINDS: dict[str, type[EventData]] = {}  # every declared kind by name, filled as declared

# What the fields below may say (the enums of other layers aside).
CellStatus = Literal["ok", "error", "interrupted"]
# The person's answer to a question (a tool call's, or the trust question): yes, no, no
# one to ask (nbclient, papermill), or the stop button while it waited.
Answer = Literal["approved", "declined", "unanswerable", "interrupted"]
TrustedBy = Literal["store", "environment", "none"]  # `environment`: LILY_TRUST
InvokedBy = Literal["manual", "auto"]  # the person, or the model
Caller = Literal["model", "owner"]  # who called a tool: the model, or a tool_dispatch command
ScriptOutcome = Literal["ran", "timeout", "interrupted"]
# What came of a skill selection: a skill; none; a reply naming no listed skill (unknown)
# or choosing nothing readable (malformed); a skill whose SKILL.md would not fit the
# model's context window (too_long).
SelectionOutcome = Literal["selected", "none", "unknown", "malformed", "too_long"]
DecidedBy = Literal["ranker", "model"]  # the shortlist's best match, or the model among several
CallOutcome = Literal["ok", "cancelled", "error"] | ModelFault  # error: a bug in Lily
LoadOutcome = ModelFault | Literal["interrupted"]  # a load that gave the cell no model


@dataclass(frozen=True, kw_only=True)
class EventData:
    """The data of one kind of event; `event` is its name in the log."""

    event: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Every declared kind is known by its name (a tool may declare its own).
        super().__init_subclass__(**kwargs)
        if cls.event:
            KINDS[cls.event] = cls

    def as_data(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, kw_only=True)
class SessionStarted(EventData):
    event: ClassVar[str] = "session_started"
    workspace: str
    agent: str
    model: str | None
    persona_files: list[str]
    settings: dict[str, str]  # the session's LILY_* variables (none credential-like)


@dataclass(frozen=True, kw_only=True)
class SkillCatalogUpdated(EventData):
    event: ClassVar[str] = "skill_catalog_updated"
    version: int
    count: int
    roots: list[dict[str, Any]]  # source, path, exists
    digest: str
    shadowed: list[str]


@dataclass(frozen=True, kw_only=True)
class TrustChecked(EventData):
    """The workspace's trust as the session starts (replay starts from it)."""

    event: ClassVar[str] = "trust_checked"
    by: TrustedBy
    trusted_skills: dict[str, str]  # skill folder (in the workspace) -> trusted digest
    config_trusted: bool  # lily.yaml (if any) applies whole
    held_skills: list[str]  # "name (folder, new|changed)"
    held_settings: list[str]  # lily.yaml settings not applied
    problem: str | None = None  # the trust store could not be read


@dataclass(frozen=True, kw_only=True)
class TrustDecided(EventData):
    """The person's answer to the trust question, and what it trusted."""

    event: ClassVar[str] = "trust_decided"
    outcome: Answer
    skills: list[str]
    settings: list[str]


@dataclass(frozen=True, kw_only=True)
class SkillWarning(EventData):
    """One diagnostic of a snapshot, with the keys `lily skills --json` gives it."""

    event: ClassVar[str] = "skill_warning"
    kind: DiagnosticKind
    skill: str
    source: str
    path: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class Cell(EventData):
    event: ClassVar[str] = "cell"
    code: str


@dataclass(frozen=True, kw_only=True)
class CellFinished(EventData):
    event: ClassVar[str] = "cell_finished"
    status: CellStatus
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class Command(EventData):
    event: ClassVar[str] = "command"
    name: str
    argument: str
    ok: bool
    error: str | None = None
    # What the person was shown, as a digest: replay compares it without the log
    # holding every listing.
    output_sha256: str | None = None
    output_chars: int | None = None


@dataclass(frozen=True, kw_only=True)
class SkillInvoked(EventData):
    event: ClassVar[str] = "skill_invoked"
    name: str
    mode: InvokedBy
    command: str | None = None


@dataclass(frozen=True, kw_only=True)
class SkillLoaded(EventData):
    event: ClassVar[str] = "skill_loaded"
    name: str
    path: str
    digest: str


@dataclass(frozen=True, kw_only=True)
class SkillSelection(EventData):
    """The skill of a request to a model without tools: the shortlist (name and score
    of its best matches), who decided (the ranker, or the model among near-equal
    matches) and why, and what came of it."""

    event: ClassVar[str] = "skill_selection"
    outcome: SelectionOutcome
    name: str | None = None
    detail: str | None = None
    reply: str = ""  # the model's declaration, when it was asked
    shortlist: list[dict[str, Any]] | None = None
    decided_by: DecidedBy | None = None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class ModelLoad(EventData):
    """A load that did not give the cell a model (failed or stopped)."""

    event: ClassVar[str] = "model_load"
    model: str | None
    outcome: LoadOutcome
    error: dict[str, str] | None = None


@dataclass(frozen=True, kw_only=True)
class ModelCall(EventData):
    event: ClassVar[str] = "model_call"
    model: str
    step: int | str
    outcome: CallOutcome
    latency_ms: float
    context_window: int | None
    supports_tools: bool
    response: dict[str, Any] | None = None  # text and tool calls
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    cost: float | None = None
    error: dict[str, str] | None = None  # kind and message


@dataclass(frozen=True, kw_only=True)
class ToolCalled(EventData):
    event: ClassVar[str] = "tool_call"
    name: str
    caller: Caller
    allowed: bool
    step: int | None = None
    arguments: dict[str, Any] | None = None
    error: str | None = None
    result: str = ""


@dataclass(frozen=True, kw_only=True)
class Approval(EventData):
    event: ClassVar[str] = "approval"
    tool: str
    question: str
    outcome: Answer


@dataclass(frozen=True, kw_only=True)
class SkillFileRead(EventData):
    event: ClassVar[str] = "skill_file_read"
    skill: str
    path: str
    sha256: str
    size: int


@dataclass(frozen=True, kw_only=True)
class SkillScriptRun(EventData):
    event: ClassVar[str] = "skill_script_run"
    skill: str
    script: str
    sha256: str
    arguments: list[str]
    sandboxed: bool
    outcome: ScriptOutcome
    exit_code: int | None = None
    duration_ms: float | None = None
    output_bytes: int | None = None
    output: str | None = None


EVENT_KINDS: tuple[str, ...] = tuple(KINDS)  # Lily's own kinds, declared above


@dataclass(frozen=True)
class Event:
    """One line of the log, written as a JSON object with these keys."""

    seq: int
    ts: str
    session_id: str
    event: str
    data: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


LILY_FOLDER = ".lily"  # Lily's own folder in a workspace: the session logs
# The `.gitignore` Lily writes in it: a log holds the whole conversation (what the person
# typed, what files and scripts said), which `git add .` would otherwise take.
LILY_GITIGNORE = ("# Written by Lily: its session logs hold whole conversations; "
                  "nothing here is for git.\n*\n")


def session_log_path(workspace: Path, session_id: str) -> Path:
    return workspace / LILY_FOLDER / "sessions" / f"{session_id}.jsonl"


def keep_out_of_git(path: Path) -> None:
    """Write `.gitignore` (`*`) in the `.lily` folder nearest above `path`, unless one is
    there: a file the person wrote (or a link) is never replaced. Best effort: a folder
    that takes no file only leaves the log unignored."""
    folder = next((p for p in path.parents if p.name == LILY_FOLDER), None)
    if folder is None:
        return
    try:  # O_EXCL: never over an existing file, never through a link
        fd = os.open(folder / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError:
        return
    with contextlib.suppress(OSError), os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(LILY_GITIGNORE)


class EventLog:
    """Appends events to one file (or nowhere when `path` is None).

    A log that cannot be written (read-only folder, full disk) turns itself off and
    keeps the reason in `problem`: the session goes on without it. `redact` is applied
    to the data of every event before it is written (no credential reaches the log).
    `listener` receives each event too, redacted (replay collects them this way).
    """

    def __init__(self, path: Path | None, session_id: str,
                 redact: Callable[[Any], Any] | None = None,
                 listener: Callable[[Event], None] | None = None,
                 inside: Path | None = None) -> None:
        self.path = path
        # The folder the log lives in (the workspace): no link below it is followed.
        self.inside = inside
        self.session_id = session_id
        self.redact = redact
        self.listener = listener
        self.problem: str | None = None
        self._seq = 0
        self._handle: IO[str] | None = None

    @property
    def enabled(self) -> bool:
        return self.path is not None and self.problem is None

    def emit(self, event: EventData) -> Event:
        self._seq += 1
        data = event.as_data()
        record = Event(
            seq=self._seq,
            ts=datetime.now(UTC).isoformat(timespec="milliseconds"),
            session_id=self.session_id,
            event=event.event,
            data=self.redact(data) if self.redact is not None else data,
        )
        if self.enabled:
            self._write(record)
        if self.listener is not None:
            self.listener(record)
        return record

    def _write(self, record: Event) -> None:
        assert self.path is not None
        try:
            if self._handle is None:
                self._handle = self._open()
                keep_out_of_git(self.path)
            line = json.dumps(record.as_dict(), ensure_ascii=False, default=str)
            self._handle.write(line + "\n")
            self._handle.flush()
        except OSError as exc:
            self.problem = f"the event log {self.path} cannot be written ({exc.strerror})"
            self.close()

    def _open(self) -> IO[str]:
        """The log file, for appending. Below `inside` (the workspace), no folder on the
        way and not the file itself may be a link: a downloaded folder's `.lily/sessions`
        linked to ~/.bashrc.d (or to a folder its author reads) would have the session,
        names the folder chose included, written there."""
        assert self.path is not None
        if self.inside is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        else:
            folder = self.inside
            for part in self.path.parent.relative_to(self.inside).parts:
                folder = folder / part
                if folder.is_symlink():
                    raise OSError(errno.ELOOP, f"{folder} is a link; the log is written "
                                  "only inside the workspace")
                folder.mkdir(exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        return open(os.open(self.path, flags, 0o666), "a", encoding="utf-8")

    def close(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):
                self._handle.close()
            self._handle = None
