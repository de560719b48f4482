"""The record's index: where each recorded turn and conversation is in the workspace's
session logs (docs/sessions.md).

The record is the session logs themselves (`.lily/sessions/*.jsonl`: each chat turn is a
`turn` event, each new conversation a `conversation` event); the index
(`.lily/index.jsonl`) says where those lines are, so a cell finds its turn by key in a
dictionary and reads one line. It is a cache, kept bounded (MAX_ENTRIES, the newest), and
checked against the logs: a log it has not seen (a new session, a clone's committed
record) or not seen whole is scanned; a lost index is rebuilt from the logs; a damaged
one too, and said once. Only this workspace's logs are read: `.lily` and its
`sessions` may not be links, nor may a log, whose name is checked before it is opened.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from lily_kernel.events import LILY_FOLDER

__all__ = ["INDEX_FILE", "MAX_ENTRIES", "Entry", "RecordIndex"]

INDEX_FILE = "index.jsonl"
MAX_ENTRIES = 20_000  # turns and conversations kept in the index: the newest
MAX_LOG_BYTES = 256 * 1024 * 1024  # a log past this is scanned no further
MAX_LINE_BYTES = 16 * 1024 * 1024  # as replay reads logs (replay/log.py)
_HEADER = {"index": "lily-record", "version": 1}
_LOG_NAME = re.compile(r"[A-Za-z0-9_.-]{1,200}\.jsonl")
_WANTED = (b'"event": "turn"', b'"event": "conversation"')  # as EventLog writes them


@dataclass(frozen=True)
class Entry:
    """One recorded turn (`key`, who answered it: `source`) or conversation, and where
    its line is: log, offset, length. `text`: a turn's request, cut (what /resume
    lists)."""

    kind: Literal["turn", "conversation"]
    log: str
    at: int
    size: int
    ts: str
    conversation: str
    notebook: str | None = None
    key: str | None = None
    source: str | None = None
    text: str = ""
    # A turn's conversation so far and request, digested (`near`): a turn missed by
    # key finds the recorded turn it would have been, to say what differs.
    near: str | None = None


class RecordIndex:
    """One workspace's index, read and kept up to date by `refresh`; written to disk
    only when `writable` (the session keeps a log)."""

    def __init__(self, workspace: Path, writable: bool) -> None:
        self.folder = workspace / LILY_FOLDER
        self.sessions = self.folder / "sessions"
        self.path = self.folder / INDEX_FILE
        self.writable = writable
        self.entries: list[Entry] = []
        self.scanned: dict[str, int] = {}  # log -> bytes scanned (and indexed) so far
        self._read_to = 0  # of the index file
        self._line = 0  # lines of it read
        self._seen_folder: tuple[int, int] | None = None  # the sessions folder's mtime, size
        self._answers: dict[str, Entry] = {}  # key -> the newest turn the model answered
        self._near: dict[str, Entry] = {}  # near -> the same
        self._lines: set[tuple[str, int]] = set()  # (log, offset) of each entry kept

    # --- keeping it up to date ------------------------------------------------------

    def refresh(self) -> str | None:
        """Read what other sessions added, scan the logs not indexed whole; rebuild a
        damaged index. What the person is told, if anything."""
        if not self._safe_folders():
            self._forget_all()
            return None
        told = None
        problem = self._read_index()
        if problem is not None:
            told = (f"The record's index {self.path} was damaged ({problem}); it is "
                    "rebuilt from the session logs.")
            self._forget_all()
            self._rewrite()
        self._scan_logs()
        return told

    def _forget_all(self) -> None:
        self.entries, self.scanned, self._answers, self._lines = [], {}, {}, set()
        self._near = {}
        self._read_to, self._line, self._seen_folder = 0, 0, None

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

    def _read_index(self) -> str | None:
        """Take up the index file's lines not read yet; what is wrong with it, if so."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return None if not self.entries else f"it cannot be read: {exc.strerror}"
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return "it is not a file"
            size = os.fstat(handle.fileno()).st_size
            if size < self._read_to:  # rewritten by another session: read it anew
                self._forget_all()
            handle.seek(self._read_to)
            data = handle.read(max(0, size - self._read_to))
        end = data.rfind(b"\n") + 1  # a line being written is read next time
        lines = data[:end].splitlines()
        try:  # all at once (one parse: a 1,000-turn index in a few ms)
            items = json.loads(b"[" + b",".join(lines) + b"]") if lines else []
        except (ValueError, RecursionError):
            items = [_parsed(line) for line in lines]  # which line it is
        for item in items:
            self._line += 1
            problem = self._take(item, first=self._line == 1)
            if problem is not None:
                return f"line {self._line}: {problem}"
        self._read_to += end
        if self._line > 2 * (len(self.entries) + len(self.scanned)) + 100:
            self._rewrite()  # mostly superseded `scanned` lines: written anew, short
        return None

    def _take(self, item: Any, first: bool) -> str | None:
        if item is _NOT_JSON:
            return "not JSON"
        if not isinstance(item, dict):
            return "not an entry"
        if first:
            return None if item == _HEADER else "not Lily's index of this version"
        if set(item) == {"scanned", "size"}:
            if not (isinstance(item["scanned"], str) and _LOG_NAME.fullmatch(item["scanned"])
                    and isinstance(item["size"], int) and item["size"] >= 0):
                return "a scanned log that is no log name or size"
            self.scanned[item["scanned"]] = item["size"]
            return None
        entry = _checked(item.get("entry"))
        if isinstance(entry, str):
            return entry
        if not _LOG_NAME.fullmatch(entry.log) or entry.at < 0 or \
                not 0 < entry.size <= MAX_LINE_BYTES:
            return "an entry that points nowhere"
        self._keep(entry)
        return None

    def _keep(self, entry: Entry) -> None:
        if (entry.log, entry.at) in self._lines:  # read again (this session's own lines)
            return
        self._lines.add((entry.log, entry.at))
        self.entries.append(entry)
        if entry.kind == "turn" and entry.key and entry.source in ("model", "diverged"):
            for table, name in ((self._answers, entry.key), (self._near, entry.near)):
                old = table.get(name) if name else None
                if name and (old is None or old.ts <= entry.ts):
                    table[name] = entry

    def _scan_logs(self) -> None:
        """Index what the logs hold past what was scanned, when the sessions folder
        changed since the last look (a new log, one removed) or was never looked at."""
        try:
            status = os.stat(self.sessions)
        except OSError:
            return
        seen = (status.st_mtime_ns, status.st_size)
        if seen == self._seen_folder:
            return
        self._seen_folder = seen
        try:
            logs = [(e.name, e.stat(follow_symlinks=False)) for e in os.scandir(self.sessions)
                    if _LOG_NAME.fullmatch(e.name) and e.is_file(follow_symlinks=False)]
        except OSError:
            return
        for name, log in sorted(logs, key=lambda n: n[1].st_mtime_ns):
            done = self.scanned.get(name, 0)
            if log.st_size != done:
                self.scan(name, 0 if log.st_size < done else done)

    def scan(self, name: str, start: int) -> None:
        """Index the turns and conversations of one log from byte `start` (a log being
        written: up to its last whole line)."""
        if start == 0:
            self.entries = [e for e in self.entries if e.log != name]
            self._answers = {k: e for k, e in self._answers.items() if e.log != name}
            self._near = {k: e for k, e in self._near.items() if e.log != name}
            self._lines = {line for line in self._lines if line[0] != name}
        found, offset = [], start
        with contextlib.suppress(OSError), self._open_log(name) as handle:
            handle.seek(start)
            for line in handle:
                if not line.endswith(b"\n") or offset + len(line) > MAX_LOG_BYTES:
                    break
                if any(w in line for w in _WANTED):
                    entry = _entry_of(line, name, offset)
                    if entry is not None:
                        found.append(entry)
                offset += len(line)
        for entry in found:
            self._keep(entry)
        self.scanned[name] = offset
        self._append([{"entry": asdict(e)} for e in found] +
                     [{"scanned": name, "size": offset}])
        if len(self.entries) > MAX_ENTRIES:
            self.entries = sorted(self.entries, key=lambda e: e.ts)[-MAX_ENTRIES:]
            self._lines = {(e.log, e.at) for e in self.entries}
            self._answers = {k: e for k, e in self._answers.items()
                             if (e.log, e.at) in self._lines}
            self._rewrite()

    def add(self, entry: Entry, log_size: int) -> None:
        """A turn or conversation this session just wrote to its log (`log_size`: the
        log's size after it)."""
        self._keep(entry)
        self.scanned[entry.log] = log_size
        self._append([{"entry": asdict(entry)}, {"scanned": entry.log, "size": log_size}])

    # --- the file ---------------------------------------------------------------------

    def _append(self, items: list[dict[str, Any]]) -> None:
        if not self.writable or not self._safe_folders():
            return
        lines = [json.dumps(i, ensure_ascii=False) + "\n" for i in items]
        with contextlib.suppress(OSError):
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW,
                         0o644)
            with os.fdopen(fd, "ab") as out:
                before = os.fstat(fd).st_size
                if before == 0:
                    lines.insert(0, json.dumps(_HEADER) + "\n")
                data = "".join(lines).encode()
                out.write(data)  # one write: whole lines, beside other sessions' appends
            if before == self._read_to:  # nothing of another session's in between:
                self._read_to, self._line = before + len(data), self._line + len(lines)

    def _rewrite(self) -> None:
        """The index written anew (header, scanned logs, entries), in place at once."""
        if not self.writable or not self._safe_folders():
            return
        lines = [_HEADER, *({"scanned": n, "size": s} for n, s in self.scanned.items()),
                 *({"entry": asdict(e)} for e in self.entries)]
        temporary = self.folder / f".{INDEX_FILE}.{os.getpid()}"
        with contextlib.suppress(OSError):
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW,
                         0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.writelines(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
            os.replace(temporary, self.path)
            self._read_to, self._line = os.stat(self.path).st_size, len(lines)

    # --- reading ----------------------------------------------------------------------

    def answer(self, key: str) -> Entry | None:
        """The newest turn of this key that a model answered (wholly or in part)."""
        return self._answers.get(key)

    def nearest(self, near: str) -> Entry | None:
        """The newest turn a model answered after the same conversation and request."""
        return self._near.get(near)

    def forget(self, entry: Entry) -> None:
        """An entry whose line is not what it said (a log changed since): the log is
        scanned anew at the next look."""
        self._answers = {k: e for k, e in self._answers.items() if e is not entry}
        self.scanned.pop(entry.log, None)
        self._seen_folder = None

    def read(self, entry: Entry) -> dict[str, Any] | None:
        """The event line an entry points at, parsed; None when it is not there."""
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


_NOT_JSON = object()
_OPTIONAL = (str, type(None))
# Each field of an index entry and its type, checked as the index is read (by hand, not
# with validation.build: a 1,000-turn index is read in a few ms so).
_TYPES: dict[str, Any] = {"kind": str, "log": str, "at": int, "size": int, "ts": str,
                          "conversation": str, "notebook": _OPTIONAL, "key": _OPTIONAL,
                          "source": _OPTIONAL, "text": str, "near": _OPTIONAL}
_REQUIRED = ("kind", "log", "at", "size", "ts", "conversation")


def _parsed(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _checked(given: Any) -> Entry | str:
    """An index entry from its JSON object, or what is wrong with it."""
    if not isinstance(given, dict):
        return "not an entry"
    for name, value in given.items():
        expected = _TYPES.get(name)
        if expected is None or isinstance(value, bool) or not isinstance(value, expected):
            return f"an entry whose {name} is wrong"
    if any(name not in given for name in _REQUIRED) or \
            given["kind"] not in ("turn", "conversation"):
        return "an entry whose kind is wrong"
    return Entry(**given)


def _entry_of(line: bytes, log: str, offset: int) -> Entry | None:
    """The entry of a `turn` or `conversation` line of a log (None: not one, or not
    readable as one: a crafted log is data)."""
    if len(line) > MAX_LINE_BYTES:
        return None
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return None
    data = event.get("data") if isinstance(event, dict) else None
    kind = event.get("event") if isinstance(event, dict) else None
    if kind not in ("turn", "conversation") or not isinstance(data, dict):
        return None
    key = data.get("key") if kind == "turn" else None
    conversation = data.get("conversation") if kind == "turn" else data.get("id")
    text = data.get("text") if kind == "turn" else ""
    fields = (event.get("ts"), conversation, data.get("notebook"), key, data.get("source"),
              text)
    if not all(isinstance(v, str) or v is None for v in fields) or \
            not isinstance(event.get("ts"), str) or not isinstance(conversation, str):
        return None
    return Entry(kind, log, offset, len(line), event["ts"], conversation,
                 data.get("notebook"), key, data.get("source") if kind == "turn" else None,
                 (text or "")[:80], near_of(data.get("parts")) if kind == "turn" else None)


def near_of(parts: Any) -> str | None:
    """What makes two turns the same turn asked in other circumstances: the same
    conversation so far and request."""
    if not isinstance(parts, dict):
        return None
    history, request = parts.get("history"), parts.get("request")
    return f"{history}:{request}" if isinstance(history, str) and isinstance(request, str) \
        else None
