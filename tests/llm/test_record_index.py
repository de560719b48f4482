"""The record's index (`.lily/index.sqlite`): a cache of where the turns are in the
session logs. Lost: rebuilt from the logs; damaged: said once and rebuilt, the logs kept;
bounded; appended to by sessions side by side; never pointing out of the workspace's own
logs; not written without a log."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from lily_kernel.record import index as index_module
from lily_kernel.record.index import RecordIndex
from lily_kernel.record.index_rows import VERSION
from tests.llm.test_record import CELLS, record_three, run, start
from tests.llm.test_skill_tools import reply


def replayed(workspace: Path, environ: dict[str, str]) -> list[list[str]]:
    """What a new session answers for the three recorded cells (the model has none)."""
    again = start(workspace, environ)
    try:
        found = []
        for code in CELLS:
            try:
                found.append(run(again, code)[1].replies)
            except AssertionError:  # the scripted model had to answer: not replayed
                found.append([])
        return found
    finally:
        again.close()


def indexed(index: Path) -> list[tuple[str, str, str]]:
    """The index's entries as SQLite holds them: kind, log, request."""
    with sqlite3.connect(index) as db:
        return db.execute("SELECT kind, log, text FROM entries ORDER BY ts").fetchall()


def logs_of(workspace: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (workspace / ".lily" / "sessions").glob("*.jsonl")}


def test_a_lost_index_is_rebuilt_from_the_logs(workspace, environ) -> None:
    record_three(workspace, environ)
    index = workspace / ".lily" / "index.sqlite"
    index.unlink()
    assert replayed(workspace, environ) == [["Four."], ["Friday."], ["2+2."]]
    assert index.is_file()
    turns = [e for e in indexed(index) if e[0] == "turn"]
    assert [t[2] for t in turns][:3] == list(CELLS)


def test_a_damaged_index_is_said_once_and_rebuilt(workspace, environ) -> None:
    record_three(workspace, environ)
    index = workspace / ".lily" / "index.sqlite"
    logs = logs_of(workspace)
    index.write_bytes(b"not a database at all\n" * 100)
    again = start(workspace, environ)
    _, sink = run(again, CELLS[0])
    assert sink.notices[0] == (f"The record's index {index} was damaged (file is not a "
                               "database); it is rebuilt from the session logs.")
    assert sink.replies == ["Four."]
    index.write_bytes(b"\0" * 4096)  # damaged again, under the open session
    _, second = run(again, CELLS[1])
    assert second.replies == ["Friday."]
    assert not any("damaged" in n for n in second.notices)  # once a session
    again.close()
    assert len([e for e in indexed(index) if e[0] == "turn"]) >= 3
    kept = logs_of(workspace)
    assert {name: kept[name] for name in logs} == logs  # the record itself untouched


def test_an_entry_pointing_out_of_the_logs_is_never_read(workspace, environ) -> None:
    """An index row naming a log outside `.lily/sessions` (a crafted index), the newest
    of its key, is dropped; the turn is answered from the log it was recorded in."""
    record_three(workspace, environ)
    index = workspace / ".lily" / "index.sqlite"
    with sqlite3.connect(index) as db:
        db.execute("INSERT INTO entries SELECT kind, '../../x.jsonl', at, size, '9999', "
                   "conversation, notebook, key, source, text, near FROM entries "
                   "WHERE text = ?", (CELLS[0],))
    assert replayed(workspace, environ)[0] == ["Four."]
    assert "../../x.jsonl" not in {e[1] for e in indexed(index)}


def test_a_busy_index_is_never_taken_for_a_damaged_one(workspace, environ,
                                                      monkeypatch) -> None:
    """Another kernel holding the index past the wait: this one goes on without it (the
    model answers), says nothing, and deletes nothing."""
    record_three(workspace, environ)
    monkeypatch.setattr(index_module, "BUSY_SECONDS", 0.2)
    index = workspace / ".lily" / "index.sqlite"
    holder = sqlite3.connect(index, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    again = start(workspace, environ)
    try:
        _, sink = run(again, "A new question", reply("New."))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    again.close()
    assert sink.replies == ["New."]
    assert not any("damaged" in n for n in sink.notices)
    assert sorted(e[2] for e in indexed(index) if e[0] == "turn")[:3] == sorted(CELLS)


def test_the_index_is_bounded(workspace, environ, monkeypatch) -> None:
    monkeypatch.setattr(index_module, "MAX_ENTRIES", 4)
    runtime = start(workspace, environ)
    for n in range(6):
        run(runtime, f"Question {n}", reply(f"Answer {n}."))
    runtime.close()
    index = RecordIndex(workspace, writable=False)
    index.refresh()
    kept = [e.text for e in index.turns()]
    assert len(kept) <= 4
    assert "Question 5" in kept and "Question 0" not in kept  # the newest are kept
    assert len(indexed(workspace / ".lily" / "index.sqlite")) <= 4


def test_sessions_side_by_side_index_each_line_once(workspace, environ) -> None:
    """Two kernels' indexes scanning the same logs at once: every turn indexed once."""
    record_three(workspace, environ)
    (workspace / ".lily" / "index.sqlite").unlink()
    indexes = [RecordIndex(workspace, writable=True) for _ in range(4)]
    failures: list[BaseException] = []

    def scan(index: RecordIndex) -> None:
        try:
            assert index.refresh() is None
        except (AssertionError, sqlite3.Error) as exc:  # reported below, in this thread
            failures.append(exc)

    threads = [threading.Thread(target=scan, args=(i,)) for i in indexes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    turns = [e for e in indexed(workspace / ".lily" / "index.sqlite") if e[0] == "turn"]
    assert sorted(t[2] for t in turns) == sorted(CELLS)


def test_another_folders_records_are_never_read(workspace, environ, tmp_path) -> None:
    """A downloaded folder whose `.lily/sessions` is a link to another workspace's logs
    (or whose index names a log outside) answers nothing from them."""
    record_three(workspace, environ)
    other = tmp_path / "other"
    (other / ".lily").mkdir(parents=True)
    os.symlink(workspace / ".lily" / "sessions", other / ".lily" / "sessions")
    assert replayed(other, environ) == [[], [], []]
    linked = tmp_path / "linked"
    linked.mkdir()
    os.symlink(workspace / ".lily", linked / ".lily")
    assert replayed(linked, environ) == [[], [], []]


def test_a_log_linked_into_the_sessions_folder_is_not_read(workspace, environ,
                                                          tmp_path) -> None:
    record_three(workspace, environ)
    other = tmp_path / "other"
    (other / ".lily" / "sessions").mkdir(parents=True)
    for log in (workspace / ".lily" / "sessions").glob("*.jsonl"):
        os.symlink(log, other / ".lily" / "sessions" / log.name)
    assert replayed(other, environ) == [[], [], []]


def test_without_a_log_nothing_is_written_but_the_record_is_read(workspace,
                                                                 environ) -> None:
    record_three(workspace, environ)
    index = workspace / ".lily" / "index.sqlite"
    index.unlink()
    again = start(workspace, environ, LILY_EVENT_LOG="0")
    assert run(again, CELLS[0])[1].replies == ["Four."]
    again.close()
    assert not index.exists()


def test_two_sessions_of_one_workspace_see_each_others_turns(workspace, environ) -> None:
    first = start(workspace, environ)
    second = start(workspace, environ)
    run(first, "Shared question", reply("Shared answer."))
    _, sink = run(second, "Shared question")
    assert sink.replies == ["Shared answer."]
    first.close()
    second.close()


def test_a_crafted_index_that_never_ends_is_taken_for_damaged(tmp_path: Path) -> None:
    """A downloaded folder's index whose `logs` and `entries` are views over an endless
    recursive query (the version Lily writes, so taken as Lily's): a query of it would
    run forever, holding the index's lock and the cell that reads the record. Only Lily's
    own schema is read; anything else is damaged and rebuilt."""
    sessions = tmp_path / ".lily" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "a.jsonl").write_text("")
    endless = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) ")
    with sqlite3.connect(tmp_path / ".lily" / "index.sqlite") as db:
        db.executescript(
            f"CREATE VIEW logs AS {endless} SELECT 'a.jsonl' AS name, x AS size FROM c;"
            f"CREATE VIEW entries AS {endless} SELECT 'turn' AS kind, 'a.jsonl' AS log, "
            "x AS at, 1 AS size, x AS ts, 'c' AS conversation, NULL AS notebook, 'k' AS "
            "key, 'model' AS source, '' AS text, NULL AS near FROM c;"
            f"PRAGMA user_version = {VERSION};")
    def read(index: RecordIndex, said: list[Any]) -> None:
        said.append((index.refresh(), index.answers("k"), index.turns()))

    for writable in (True, False):
        index, said = RecordIndex(tmp_path, writable), list[Any]()
        worker = threading.Thread(target=read, args=(index, said), daemon=True)
        worker.start()
        worker.join(20)
        assert not worker.is_alive(), "the crafted index held the reader"
        notice, answers, turns = said[0]
        assert answers == [] and turns == []
        if writable:
            assert notice is not None and "damaged" in notice
        index.close()


def test_an_index_larger_than_lilys_is_never_copied_whole(tmp_path: Path, monkeypatch) -> None:
    """A session without a log reads the index from an in-memory copy: a downloaded
    folder's index far larger than Lily ever writes is damaged, not copied whole."""
    sessions = tmp_path / ".lily" / "sessions"
    sessions.mkdir(parents=True)
    path = tmp_path / ".lily" / "index.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE padding (x BLOB)")
        db.execute("INSERT INTO padding VALUES (zeroblob(200000))")
    monkeypatch.setattr(index_module, "MAX_INDEX_BYTES", 100_000)
    for writable in (False, True):
        index = RecordIndex(tmp_path, writable)
        notice = index.refresh()
        assert notice is not None and "larger than" in notice, notice
        assert index.turns() == []
        index.close()
    assert path.stat().st_size < 100_000  # the writable session made it anew
