"""What the record's index holds (record/index.py): its schema, which a file must have
exactly to be read (a downloaded folder's index is data), and the entry a log's `turn`
or `conversation` line makes."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # sqlite3 loads with a record to read (record/index.py)
    import sqlite3

__all__ = ["MAX_LINE_BYTES", "SCHEMA", "VERSION", "Entry", "entry_of", "near_of",
           "schema_is_ours"]

MAX_LINE_BYTES = 16 * 1024 * 1024  # as replay reads logs (replay/log.py)
VERSION = 1
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS entries (
    kind TEXT NOT NULL, log TEXT NOT NULL, at INTEGER NOT NULL, size INTEGER NOT NULL,
    ts TEXT NOT NULL, conversation TEXT NOT NULL, notebook TEXT, key TEXT, source TEXT,
    text TEXT NOT NULL, near TEXT, PRIMARY KEY (log, at));
CREATE INDEX IF NOT EXISTS entries_key ON entries (key);
CREATE INDEX IF NOT EXISTS entries_near ON entries (near);
CREATE INDEX IF NOT EXISTS entries_conversation ON entries (conversation);
CREATE INDEX IF NOT EXISTS entries_ts ON entries (ts);
CREATE TABLE IF NOT EXISTS logs (name TEXT PRIMARY KEY, size INTEGER NOT NULL);
PRAGMA user_version = {VERSION};
"""



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


def _schema_of(db: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """Every table, index, view and trigger of a database, as SQLite keeps them."""
    return sorted(db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")
                  .fetchall(), key=repr)


_EXPECTED: list[list[tuple[Any, ...]]] = []


def _expected_schema() -> list[tuple[Any, ...]]:
    """The schema `SCHEMA` makes (as SQLite keeps it), made once in memory."""
    if not _EXPECTED:
        import sqlite3

        with contextlib.closing(sqlite3.connect(":memory:")) as db:
            db.executescript(SCHEMA)
            _EXPECTED.append(_schema_of(db))
    return _EXPECTED[0]


def entry_of(line: bytes, log: str, offset: int) -> Entry | None:
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
    fields_ = (event.get("ts"), conversation, data.get("notebook"), key, data.get("source"),
               text)
    if not all(isinstance(v, str) or v is None for v in fields_) or \
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


def schema_is_ours(db: sqlite3.Connection, version: int) -> bool:
    """Whether `db` holds only the schema Lily writes: a crafted file's views (an endless
    recursive query), triggers or other tables would run with every read. (At version
    0, part of it: another kernel may be making it now.)"""
    schema, expected = _schema_of(db), _expected_schema()
    return schema == expected if version else all(row in expected for row in schema)
