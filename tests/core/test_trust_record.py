"""A folder's record of turns as trust sees it (trust/record.py): content that came with
the folder, which the trust question names, counted as the record's reader finds it."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

import pytest

from lily_kernel.environment import Workspace
from lily_kernel.trust import record as trust_record
from lily_kernel.trust.record import RecordFacts, read_record
from tests.core.test_trust import lily

TURN = '{"event": "turn", "data": {}}\n'
OTHER = '{"event": "cell", "data": {}}\n'


@pytest.fixture
def person(environ: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.delenv("LILY_TRUST", raising=False)
    return {k: v for k, v in environ.items() if k not in ("LILY_TRUST", "LILY_EVENT_LOG")}


def logs(workspace: Path, **texts: str) -> Path:
    sessions = workspace / ".lily" / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (sessions / f"{name}.jsonl").write_text(text)
    return sessions


def test_a_record_is_its_turns_in_logs_and_index(workspace: Path) -> None:
    assert read_record(workspace) is None
    sessions = logs(workspace, own=OTHER * 3)  # this session's own, before its first turn
    assert read_record(workspace) is None
    logs(workspace, a=OTHER + TURN + TURN, b=TURN)
    assert read_record(workspace) == RecordFacts(logs=2, turns=3)
    # An index entry may point at any line: a turn the logs' scan would not see counts.
    with contextlib.closing(sqlite3.connect(workspace / ".lily" / "index.sqlite")) as db, db:
        db.execute("CREATE TABLE entries (kind TEXT, log TEXT, at INTEGER)")
        db.executemany("INSERT INTO entries VALUES (?, ?, ?)", [
            ("turn", "own.jsonl", 0), ("turn", "a.jsonl", len(OTHER)),  # the second: seen
            ("turn", "gone.jsonl", 0), ("conversation", "b.jsonl", 0)])  # no such log
    assert read_record(workspace) == RecordFacts(logs=3, turns=4)
    os.mkfifo(sessions / "fifo.jsonl")  # never opened
    (sessions / "link.jsonl").symlink_to(sessions / "a.jsonl")  # never read
    assert read_record(workspace) == RecordFacts(logs=3, turns=4)


def test_a_record_through_a_link_is_no_record(workspace: Path, tmp_path: Path) -> None:
    """The record's reader reads nothing through a linked `.lily` or `sessions`."""
    logs(tmp_path / "elsewhere", a=TURN)
    (workspace / ".lily").symlink_to(tmp_path / "elsewhere" / ".lily")
    assert read_record(workspace) is None
    (workspace / ".lily").unlink()
    (workspace / ".lily").mkdir()
    (workspace / ".lily" / "sessions").symlink_to(tmp_path / "elsewhere" / ".lily" / "sessions")
    assert read_record(workspace) is None


def test_a_record_past_the_bound_is_counted_as_at_least(workspace: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    logs(workspace, a=TURN * 10, b=TURN * 10)
    monkeypatch.setattr(trust_record, "MAX_SCANNED", len(TURN) * 4 + 1)
    facts = read_record(workspace)
    assert facts == RecordFacts(logs=1, turns=4, more=True)
    assert facts.line().startswith(".lily/sessions/ (at least 4 turns in 1 session log): ")
    assert RecordFacts(1, 1).line() == (
        ".lily/sessions/ (1 turn in 1 session log): Run All replays its answers, and under "
        "full auto runs their code (python, shell, MCP tools) unasked")


def test_a_folder_that_ships_only_a_record_asks_and_says_so(workspace: Path,
                                                             person: dict[str, str]) -> None:
    logs(workspace, shipped=TURN * 2)
    env = Workspace.load(workspace, person)
    _, skills, settings = env.pending_trust()
    line = ("record .lily/sessions/ (2 turns in 1 session log): Run All replays its answers, "
            "and under full auto runs their code (python, shell, MCP tools) unasked")
    assert skills == [] and settings == [line]
    done = lily("trust", str(workspace), env=person, stdin="n\n")
    assert done.returncode == 1 and line in done.stdout
    assert "Trusting it lets what came with the folder take effect:" in done.stdout
    assert lily("trust", str(workspace), "--yes", env=person).returncode == 0
    # Trusted, its record is the sessions Lily keeps there: nothing more to ask.
    assert Workspace.load(workspace, person).pending_trust()[2] == []


def test_a_crafted_index_that_never_ends_is_not_read(workspace: Path) -> None:
    """An index whose `entries` is a view over an endless recursive query, none of whose
    rows is a turn: read as it was, the session's start (the trust question) never ends."""
    import threading

    logs(workspace, a=TURN)
    with contextlib.closing(sqlite3.connect(workspace / ".lily" / "index.sqlite")) as db, db:
        db.execute("CREATE VIEW entries AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
                   "SELECT x + 1 FROM c) SELECT CASE WHEN x < 0 THEN 'turn' ELSE 'other' END "
                   "AS kind, 'a.jsonl' AS log, x AS at "
                   "FROM c")
    found: list[RecordFacts | None] = []
    reader = threading.Thread(target=lambda: found.append(read_record(workspace)),
                              daemon=True)
    reader.start()
    reader.join(20)
    assert not reader.is_alive(), "the crafted index held the reader"
    assert found == [RecordFacts(logs=1, turns=1)]
