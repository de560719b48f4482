"""The record's index: where each recorded turn and conversation is in the workspace's
session logs (docs/sessions.md).

The record is the session logs themselves (`.lily/sessions/*.jsonl`: each chat turn is a
`turn` event, each new conversation a `conversation` event); the index
(`.lily/index.sqlite`, SQLite) says where those lines are, so a cell finds its turn by
key with one query and reads one line. It is a cache: kernels of one workspace append
to it side by side (each scan in one transaction, a line indexed once, another kernel's
write waited for), it keeps the newest MAX_ENTRIES, and a log it has not seen (a new session, a
clone's committed record) or not seen whole is scanned. A lost index is rebuilt from the
logs; a damaged one is said once, deleted and rebuilt: the logs are never touched. Only
this workspace's logs are read: `.lily` and its `sessions` may not be links, nor may a
log, whose name is checked before it is opened.
"""

from __future__ import annotations

import contextlib
import json
import operator
import os
import re
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lily_kernel.events import LILY_FOLDER
from lily_kernel.record.index_rows import (
    MAX_LINE_BYTES,
    SCHEMA,
    VERSION,
    Entry,
    entry_of,
    near_of,
    schema_is_ours,
)

if TYPE_CHECKING:  # sqlite3 (~1.5 MiB) loads with a record to read, not at the kernel's start
    import sqlite3

__all__ = ["INDEX_FILE", "MAX_ENTRIES", "Entry", "RecordIndex", "near_of"]

INDEX_FILE = "index.sqlite"
OLD_INDEX = "index.jsonl"  # the index before SQLite: removed when the new one is made
MAX_ENTRIES = 20_000  # turns and conversations kept in the index: the newest
MAX_LOG_BYTES = 256 * 1024 * 1024  # a log past this is scanned no further
MAX_INDEX_BYTES = 64 * 1024 * 1024  # far past MAX_ENTRIES of Lily's: a larger one is not hers
MATCHES = 20  # recorded answers of one key considered (the newest)
BUSY_SECONDS = 10.0  # how long a kernel waits for another's write to the index
_LOG_NAME = re.compile(r"[A-Za-z0-9_.-]{1,200}\.jsonl")
_WANTED = (b'"event": "turn"', b'"event": "conversation"')  # as EventLog writes them
@dataclass(frozen=True)
class Scanned:
    """What one log holds from byte `start` to `end` (its last whole line read)."""

    log: str
    start: int
    end: int
    entries: list[Entry]


_COLUMNS = ", ".join(f.name for f in fields(Entry))
_ROW = operator.attrgetter(*(f.name for f in fields(Entry)))  # an entry as its row
_ANSWERED = "kind = 'turn' AND source IN ('model', 'diverged')"


class RecordIndex:
    """One workspace's index, kept up to date by `refresh`; on disk when `writable` (the
    session keeps a log), else in memory, from a copy of what is on disk."""

    def __init__(self, workspace: Path, writable: bool) -> None:
        self.folder = workspace / LILY_FOLDER
        self.sessions = self.folder / "sessions"
        self.path = self.folder / INDEX_FILE
        self.writable = writable
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # one session's threads use one connection
        self._seen_folder: tuple[int, int] | None = None  # the sessions folder's mtime, size

    # --- keeping it up to date ------------------------------------------------------

    def refresh(self) -> str | None:
        """Scan the logs not indexed whole; rebuild a damaged index. What the person is
        told, if anything."""
        if not self._safe_folders():
            self.close()
            return None
        import sqlite3

        try:
            with self._lock:  # the file may have changed under an open connection
                self._connection().execute("SELECT name FROM logs LIMIT 1").fetchall()
            self._scan_logs()
            return None
        except sqlite3.OperationalError as exc:
            if "no such" not in str(exc):  # busy past the timeout, a full disk: next time
                return None
            problem = str(exc)
        except sqlite3.DatabaseError as exc:  # not a database, malformed, another version
            problem = str(exc)
        self._recreate()
        with contextlib.suppress(sqlite3.DatabaseError):
            self._scan_logs()
        return (f"The record's index {self.path} was damaged ({problem}); it is rebuilt "
                "from the session logs.")

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
        self._db, self._seen_folder = None, None

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = self._open()
        return self._db

    def _open(self) -> sqlite3.Connection:
        """The index on disk (made when missing), or an in-memory copy of it."""
        import sqlite3

        try:
            found = os.lstat(self.path)
        except FileNotFoundError:
            found = None
        if found is not None and not stat.S_ISREG(found.st_mode):
            raise sqlite3.DatabaseError("it is not a file")
        if found is not None and found.st_size > MAX_INDEX_BYTES:  # copied whole when read-only
            raise sqlite3.DatabaseError(f"it is larger than {MAX_INDEX_BYTES >> 20} MiB")
        if not self.writable:
            db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            if found is not None:
                with contextlib.closing(sqlite3.connect(
                        f"{self.path.as_uri()}?mode=ro", uri=True)) as disk:
                    disk.backup(db)
        else:
            # A rollback journal (no WAL): nothing is left beside the file, which may
            # be deleted at any time; another kernel's write is waited for.
            db = sqlite3.connect(self.path, timeout=BUSY_SECONDS, isolation_level=None,
                                 check_same_thread=False)
            db.execute("PRAGMA synchronous = OFF")  # a cache: a damaged one is rebuilt
            if found is None:
                with contextlib.suppress(OSError):
                    os.unlink(self.folder / OLD_INDEX)
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, VERSION):
            db.close()
            raise sqlite3.DatabaseError(f"version {version}, not {VERSION}")
        if not schema_is_ours(db, version):
            db.close()
            raise sqlite3.DatabaseError("its tables are not the index's")
        if version == 0:
            db.executescript(SCHEMA)
        return db

    def _recreate(self) -> None:
        """A damaged index removed (the logs stay), and made anew at the next use."""
        self.close()
        if self.writable:
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(OSError):
                    os.unlink(f"{self.path}{suffix}")

    def _safe_folders(self) -> bool:
        """`.lily` and `.lily/sessions` are real folders of this workspace (not links):
        another folder's records are never read as this one's."""
        for folder in (self.folder, self.sessions):
            try:
                if not stat.S_ISDIR(os.lstat(folder).st_mode):
                    return False
            except OSError:
                return False
        return True

    def _scan_logs(self) -> None:
        """Index what the logs hold past what was scanned, when the sessions folder
        changed since the last look (a new log, one removed) or was never looked at."""
        try:
            status = os.stat(self.sessions)
        except OSError:
            return
        seen = (status.st_mtime_ns, status.st_size)
        if seen == self._seen_folder and self._db is not None:
            return
        try:
            logs = [(e.name, e.stat(follow_symlinks=False)) for e in os.scandir(self.sessions)
                    if _LOG_NAME.fullmatch(e.name) and e.is_file(follow_symlinks=False)]
        except OSError:
            return
        with self._lock:
            db = self._connection()
            scanned = dict(db.execute("SELECT name, size FROM logs").fetchall())
        changed = [(name, 0 if log.st_size < scanned.get(name, 0) else scanned.get(name, 0))
                   for name, log in sorted(logs, key=lambda n: n[1].st_mtime_ns)
                   if log.st_size != scanned.get(name, 0)]
        self._write([self._read_log(name, start) for name, start in changed])
        self._seen_folder = seen

    def catch_up(self, name: str) -> None:
        """Index what one log (this session's own) holds past what was scanned."""
        if not self._safe_folders():
            return
        import sqlite3

        with contextlib.suppress(sqlite3.DatabaseError):
            with self._lock:
                row = self._connection().execute("SELECT size FROM logs WHERE name = ?",
                                                 (name,)).fetchone()
            self.scan(name, row[0] if row else 0)

    def scan(self, name: str, start: int) -> None:
        """Index the turns and conversations of one log from byte `start` (a log being
        written: up to its last whole line)."""
        self._write([self._read_log(name, start)])

    def _read_log(self, name: str, start: int) -> Scanned:
        found, offset = [], start
        with contextlib.suppress(OSError), self._open_log(name) as handle:
            handle.seek(start)
            for line in handle:
                if not line.endswith(b"\n") or offset + len(line) > MAX_LOG_BYTES:
                    break
                if any(w in line for w in _WANTED):
                    entry = entry_of(line, name, offset)
                    if entry is not None:
                        found.append(entry)
                offset += len(line)
        return Scanned(name, start, offset, found)

    def _write(self, scans: list[Scanned]) -> None:
        """What was read of the logs, in one transaction; the oldest entries past
        MAX_ENTRIES dropped."""
        if not scans:
            return
        with self._lock, self._writing() as db:
            for scan in scans:
                if scan.start == 0:
                    db.execute("DELETE FROM entries WHERE log = ?", (scan.log,))
                db.executemany(f"INSERT OR IGNORE INTO entries ({_COLUMNS}) VALUES "
                               f"({', '.join('?' * len(fields(Entry)))})",
                               [_ROW(e) for e in scan.entries])
                db.execute("INSERT INTO logs (name, size) VALUES (?, ?) ON CONFLICT (name) "
                           "DO UPDATE SET size = excluded.size", (scan.log, scan.end))
            over = db.execute("SELECT count(*) FROM entries").fetchone()[0] - MAX_ENTRIES
            if over > 0:  # the oldest go
                db.execute("DELETE FROM entries WHERE rowid IN (SELECT rowid FROM entries "
                           "ORDER BY ts LIMIT ?)", (over,))

    @contextlib.contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One transaction, taken at once (another kernel's waits, up to the timeout)."""
        db = self._connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    # --- reading ----------------------------------------------------------------------

    def _entries(self, where: str, values: tuple[Any, ...] = (),
                 order: str = "ts DESC, at DESC", limit: int = MAX_ENTRIES) -> list[Entry]:
        # (at most what Lily's own index keeps: a crafted one may hold millions of rows)
        if not self._safe_folders():  # another folder's index is never read
            return []
        import sqlite3

        try:
            with self._lock:
                rows = self._connection().execute(
                    f"SELECT {_COLUMNS} FROM entries WHERE {where} ORDER BY {order} "
                    "LIMIT ?", (*values, limit)).fetchall()
        except sqlite3.DatabaseError:
            return []
        return [Entry(*row) for row in rows]

    def answers(self, key: str) -> list[Entry]:
        """The turns of this key a model answered (wholly or in part), newest first."""
        return self._entries(f"key = ? AND {_ANSWERED}", (key,), limit=MATCHES)

    def nearest(self, near: str) -> Entry | None:
        """The newest turn a model answered after the same conversation and request."""
        found = self._entries(f"near = ? AND {_ANSWERED}", (near,), limit=1)
        return found[0] if found else None

    def turns(self, notebook: str | None = None) -> list[Entry]:
        """The recorded turns (of one notebook, when given), newest first."""
        if notebook is None:
            return self._entries("kind = 'turn'")
        return self._entries("kind = 'turn' AND notebook = ?", (notebook,))

    def conversation(self, conversation: str) -> list[Entry]:
        """A conversation's entries, in the order they were written."""
        return self._entries("conversation = ?", (conversation,), order="ts, at")

    def forget(self, entry: Entry) -> None:
        """An entry whose line is not what it said (a log changed since): the log is
        scanned anew at the next look."""
        import sqlite3

        with contextlib.suppress(sqlite3.DatabaseError), self._lock, self._writing() as db:
            db.execute("DELETE FROM entries WHERE log = ? AND at = ?", (entry.log, entry.at))
            db.execute("DELETE FROM logs WHERE name = ?", (entry.log,))
        self._seen_folder = None

    def read(self, entry: Entry) -> dict[str, Any] | None:
        """The event line an entry points at, parsed; None when it is not there."""
        if not 0 < entry.size <= MAX_LINE_BYTES or not self._safe_folders():
            return None
        try:
            with self._open_log(entry.log) as handle:
                handle.seek(entry.at)
                line = handle.read(entry.size)
            event = json.loads(line)
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(event, dict) or event.get("event") != entry.kind \
                or not isinstance(event.get("data"), dict):
            return None
        return event

    def _open_log(self, name: str) -> Any:
        """A log of this workspace, for reading: a regular file, not through a link."""
        if not _LOG_NAME.fullmatch(name):
            raise OSError(f"{name!r} is no log name")
        fd = os.open(self.sessions / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        handle = os.fdopen(fd, "rb")
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            handle.close()
            raise OSError(f"{name} is not a file")
        return handle
