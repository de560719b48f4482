"""A folder's record, as trust sees it: content that arrived with the folder.

Run All answers a chat cell from the record of its turns (`.lily/sessions/*.jsonl`, found
through `.lily/index.sqlite`; docs/sessions.md), and the recorded answers' tool calls
run again, under full auto without asking once the folder is trusted. So a folder that
ships a record asks the trust question, which names it. Counted as the record's reader
(record/index.py) finds turns: the `turn` lines of the logs, as the event log writes
them, and the turn entries of the index (which may point anywhere in a log). Only when
`.lily` and `.lily/sessions` are real folders (not links): otherwise the reader reads
nothing of them. Bounded: past MAX_SCANNED bytes of logs, the count is a lower bound.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RecordFacts", "is_record_line", "read_record"]

# As events/log.py (LILY_FOLDER) and record/index.py lay the record out; the trust layer
# sits below both.
FOLDER, SESSIONS, INDEX = ".lily", "sessions", "index.sqlite"
_LOG_NAME = re.compile(r"[A-Za-z0-9_.-]{1,200}\.jsonl")
_TURN = b'"event": "turn"'  # a turn line as the event log writes it (record/index.py)
MAX_SCANNED = 64 * 1024 * 1024  # bytes of logs read to count turns
MAX_INDEXED = 100_000  # index entries read
MAX_LOGS = 10_000


@dataclass(frozen=True)
class RecordFacts:
    """A folder's record: the session logs holding turns, the turns found in them, and
    whether the count stopped at the bound."""

    logs: int
    turns: int
    more: bool = False

    def line(self) -> str:
        """The trust question's line for it."""
        turns = f"{'at least ' if self.more else ''}{self.turns:,} turn" \
            + ("" if self.turns == 1 and not self.more else "s")
        logs = f"{self.logs:,} session log" + ("" if self.logs == 1 else "s")
        return (f"{FOLDER}/{SESSIONS}/ ({turns} in {logs}): Run All replays its answers, "
                "and under full auto runs their code (python, shell, MCP tools) unasked")


def is_record_line(line: str) -> bool:
    """Whether `line` (of a `trust_checked` event's held settings) is a record's."""
    return line.startswith(f"{FOLDER}/{SESSIONS}/ (")


def _folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _open(path: Path) -> int | None:
    """A regular file of the record, open for reading (never a link, never blocking)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def _turn_lines(path: Path, budget: int) -> tuple[set[int], int, bool]:
    """The offsets of a log's turn lines, the bytes read, and whether it was cut."""
    fd = _open(path)
    if fd is None:
        return set(), 0, False
    found: set[int] = set()
    offset = 0
    with os.fdopen(fd, "rb") as handle:
        for line in handle:
            if offset + len(line) > budget:
                return found, offset, True
            if _TURN in line:
                found.add(offset)
            offset += len(line)
    return found, offset, False


def _indexed_turns(path: Path, logs: set[str]) -> set[tuple[str, int]]:
    """The turn entries of the index (SQLite, read only) that name a log of the folder."""
    import sqlite3  # with the first index read, not at the kernel's start

    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return set()
        with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as db:
            # Plain tables only: a crafted view (an endless recursive query) would hold
            # the session's start, which reads this for the trust question.
            kinds = db.execute("SELECT type FROM sqlite_master WHERE name = 'entries' OR "
                               "type IN ('view', 'trigger')").fetchall()
            if kinds != [("table",)]:
                return set()
            rows = db.execute("SELECT log, at FROM entries WHERE kind = 'turn' LIMIT ?",
                              (MAX_INDEXED,)).fetchall()
    except (OSError, sqlite3.Error):
        return set()
    return {(log, at) for log, at in rows if log in logs and isinstance(at, int)}


def read_record(workspace: Path) -> RecordFacts | None:
    """The folder's record (None: none, or no turn in it)."""
    folder = workspace / FOLDER
    sessions = folder / SESSIONS
    if not (_folder(folder) and _folder(sessions)):
        return None
    try:
        names = sorted(e.name for e in os.scandir(sessions)
                       if _LOG_NAME.fullmatch(e.name) and e.is_file(follow_symlinks=False))
    except OSError:
        return None
    if not names:
        return None
    turns: set[tuple[str, int]] = set()
    budget, more = MAX_SCANNED, len(names) > MAX_LOGS
    for name in names[:MAX_LOGS]:
        found, read, cut = _turn_lines(sessions / name, budget)
        turns.update((name, at) for at in found)
        budget -= read
        if cut:
            more = True
            break
    turns |= _indexed_turns(folder / INDEX, set(names))
    # Logs without a turn answer nothing (this session's own, before its first turn).
    return RecordFacts(len({log for log, _ in turns}), len(turns), more) \
        if turns or more else None
