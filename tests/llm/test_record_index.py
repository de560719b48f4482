"""The record's index (`.lily/index.jsonl`): a cache of where the turns are in the
session logs. Lost: rebuilt from the logs; damaged: said once and rebuilt; bounded;
never pointing out of the workspace's own logs; not written without a log."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lily_kernel.record import index as index_module
from lily_kernel.record.index import RecordIndex
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


def test_a_lost_index_is_rebuilt_from_the_logs(workspace, environ) -> None:
    record_three(workspace, environ)
    index = workspace / ".lily" / "index.jsonl"
    index.unlink()
    assert replayed(workspace, environ) == [["Four."], ["Friday."], ["2+2."]]
    assert index.is_file()
    lines = [json.loads(line) for line in index.read_text().splitlines()]
    assert lines[0] == {"index": "lily-record", "version": 1}
    assert sum(1 for line in lines if "entry" in line) >= 3


def test_a_damaged_index_is_said_once_and_rebuilt(workspace, environ) -> None:
    record_three(workspace, environ)
    index = workspace / ".lily" / "index.jsonl"
    index.write_text(index.read_text() + '{"entry": {"kind": "turn", "log": "../../x.jsonl", '
                     '"at": 0, "size": 10, "ts": "t", "conversation": "c"}}\n')
    again = start(workspace, environ)
    _, sink = run(again, CELLS[0])
    assert sink.notices[0] == (f"The record's index {index} was damaged (line 9: an entry "
                               "that points nowhere); it is rebuilt from the session logs.")
    assert sink.replies == ["Four."]
    index.write_text("not json at all\n")
    _, second = run(again, CELLS[1])
    assert second.replies == ["Friday."]
    assert not any("damaged" in n for n in second.notices)  # once a session
    again.close()
    assert "../../x.jsonl" not in index.read_text()


def test_the_index_is_bounded(workspace, environ, monkeypatch) -> None:
    monkeypatch.setattr(index_module, "MAX_ENTRIES", 4)
    runtime = start(workspace, environ)
    for n in range(6):
        run(runtime, f"Question {n}", reply(f"Answer {n}."))
    runtime.close()
    index = RecordIndex(workspace, writable=False)
    index.refresh()
    assert len(index.entries) <= 4
    kept = {e.text for e in index.entries}
    assert "Question 5" in kept and "Question 0" not in kept  # the newest are kept


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
    index = workspace / ".lily" / "index.jsonl"
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
