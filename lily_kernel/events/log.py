"""Writing the session's event log: JSON Lines, one file per session, flushed per event,
never through a link, kept out of git."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from lily_kernel.events.kinds import EventData
from lily_kernel.redaction import is_secret_name

__all__ = ["LILY_FOLDER", "Event", "EventLog", "keep_out_of_git", "recorded_settings",
           "session_log_path"]


def recorded_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """The LILY_* variables of the session, as `session_started` records them (what
    replay needs to rebuild its config); never one whose name looks like a credential."""
    return {k: v for k, v in sorted(environ.items())
            if k.startswith("LILY_") and not is_secret_name(k)}


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
        # Where the last event was written in the file: its line's offset and length in
        # bytes (the record's index points at turns so); None when it was not written.
        self.written: tuple[int, int] | None = None
        self._seq = 0
        self._size = 0  # the file's size, as this log wrote it
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
        self.written = None
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
                self._size = os.fstat(self._handle.fileno()).st_size
                keep_out_of_git(self.path)
            line = json.dumps(record.as_dict(), ensure_ascii=False, default=str) + "\n"
            self._handle.write(line)
            self._handle.flush()
            size = len(line.encode("utf-8"))
            self.written, self._size = (self._size, size), self._size + size
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
