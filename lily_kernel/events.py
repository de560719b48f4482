"""The session's structured event log: JSON Lines, one file per session, flushed per event."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel

from lily_kernel.redaction import redact_value

__all__ = ["EVENT_KINDS", "Event", "EventLog", "session_log_path"]

EventKind = Literal[
    "session_started",
    "skill_catalog_updated",
    "skill_loaded",
    "skill_invoked",
    "skill_warning",
    "command",
    "model_call",
    "tool_call",
    "cell",
    "cell_finished",
    "approval",
    "skill_file_read",
    "skill_script_run",
]
EVENT_KINDS: tuple[str, ...] = EventKind.__args__  # type: ignore[attr-defined]


class Event(BaseModel):
    """One line of the log."""

    seq: int
    ts: str
    session_id: str
    event: EventKind
    data: dict[str, Any]


def session_log_path(workspace: Path, session_id: str) -> Path:
    return workspace / ".lily" / "sessions" / f"{session_id}.jsonl"


class EventLog:
    """Appends events to one file (or nowhere when `path` is None).

    A log that cannot be written (read-only folder, full disk) turns itself off and
    keeps the reason in `problem`: the session goes on without it. Every string in an
    event is redacted (`secrets` and credential shapes) before it goes anywhere;
    `listener` receives each event too (replay collects them this way).
    """

    def __init__(self, path: Path | None, session_id: str, secrets: list[str] | None = None,
                 listener: Callable[[Event], None] | None = None) -> None:
        self.path = path
        self.session_id = session_id
        self.secrets = list(secrets or [])
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
            data=redact_value(data, self.secrets),
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
            line = json.dumps(record.model_dump(mode="json"), ensure_ascii=False, default=str)
            self._handle.write(line + "\n")
            self._handle.flush()
        except OSError as exc:
            self.problem = f"the event log {self.path} cannot be written ({exc.strerror})"
            self.close()

    def close(self) -> None:
        if self._handle is not None:
            try:
                self._handle.close()
            except OSError:
                pass
            self._handle = None
