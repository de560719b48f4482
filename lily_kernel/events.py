"""The session's structured event log: JSON Lines, one file per session, flushed per event."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal

__all__ = ["EVENT_KINDS", "Event", "EventLog", "session_log_path"]

EventKind = Literal[
    "session_started",
    "skill_catalog_updated",
    "skill_loaded",
    "skill_invoked",
    "skill_warning",
    "command",
    "model_load",
    "model_call",
    "skill_selection",
    "tool_call",
    "cell",
    "cell_finished",
    "approval",
    "skill_file_read",
    "skill_script_run",
]
EVENT_KINDS: tuple[str, ...] = EventKind.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Event:
    """One line of the log, written as a JSON object with these keys."""

    seq: int
    ts: str
    session_id: str
    event: EventKind
    data: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def session_log_path(workspace: Path, session_id: str) -> Path:
    return workspace / ".lily" / "sessions" / f"{session_id}.jsonl"


class EventLog:
    """Appends events to one file (or nowhere when `path` is None).

    A log that cannot be written (read-only folder, full disk) turns itself off and
    keeps the reason in `problem`: the session goes on without it. `redact` is applied
    to the data of every event before it is written (no credential reaches the log).
    `listener` receives each event too, redacted (replay collects them this way).
    """

    def __init__(self, path: Path | None, session_id: str,
                 redact: Callable[[Any], Any] | None = None,
                 listener: Callable[[Event], None] | None = None) -> None:
        self.path = path
        self.session_id = session_id
        self.redact = redact
        self.listener = listener
        self.problem: str | None = None
        self._seq = 0
        self._handle: IO[str] | None = None

    @property
    def enabled(self) -> bool:
        return self.path is not None and self.problem is None

    def emit(self, event: EventKind, **data: Any) -> Event:
        self._seq += 1
        record = Event(
            seq=self._seq,
            ts=datetime.now(UTC).isoformat(timespec="milliseconds"),
            session_id=self.session_id,
            event=event,
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
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
            line = json.dumps(record.as_dict(), ensure_ascii=False, default=str)
            self._handle.write(line + "\n")
            self._handle.flush()
        except OSError as exc:
            self.problem = f"the event log {self.path} cannot be written ({exc.strerror})"
            self.close()

    def close(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):
                self._handle.close()
            self._handle = None
