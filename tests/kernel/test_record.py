"""The notebook is the session across restarts, through real Lily kernels (jupyter_client
and nbclient over ZeroMQ) and the loopback model answering with a fresh token each time
(a replayed answer can be told from a new one): Run All after a restart answers from
the record with no request; an edited cell and LILY_ANSWERS=fresh ask the model; the
record answers with the model unreachable; the session that replayed replays as
identical with `lily replay`; the saved notebook wins over a newer unsaved record
(docs/sessions.md). A follow-up after a reopen and a tool call replayed under `ask`:
tests/kernel/test_record_reopen.py (a module of its own, so the two workers share them)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from lily_kernel.replay import replay_session
from tests.kernel.conftest import kernel_env
from tests.support.openai_server import OpenAIServer, Reply, fresh_tokens, tool_call

CELLS = (("lab-1", "What is 2+2?"), ("lab-2", "Read my notes"),
         ("lab-3", "Which was my first question?"))
UNREACHABLE = "http://127.0.0.1:9/v1"  # the discard port: nothing answers there
REPLAYED = "Replayed from the record: the answer openai/loop gave on "


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(default=fresh_tokens()) as srv:
        yield srv


def workspace_for(root: Path, policy: str = "") -> Path:
    workspace = root / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "lily.yaml").write_text(
        f"model: openai/loop\nstream: false\nretries: 0\n{policy}")
    (workspace / "notes.md").write_text("Ship on Friday.\n")
    return workspace


def save(path: Path, cells: tuple[tuple[str, str], ...]) -> Any:
    """The notebook as JupyterLab saves it (nbformat 4.5: each cell has its id)."""
    nb = new_notebook(cells=[new_markdown_cell("# Talk")])
    nb.metadata["kernelspec"] = {"name": "lily", "display_name": "Lily", "language": "lily"}
    for cell_id, code in cells:
        cell = new_code_cell(code)
        cell.id = cell_id
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return nb


def run_all(path: Path, env: dict[str, str]) -> Any:
    """Run All, as JupyterLab after a restart (nbclient: a new kernel, every cell)."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, kernel_name="lily", timeout=120, allow_errors=True,
                   record_timing=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute(env=env)
    return nb


def shown(cell: Any) -> list[str]:
    return [str(o.get("data", {}).get("text/plain", o.get("evalue", "")))
            for o in cell.get("outputs", [])]


def env_for(root: Path, server: OpenAIServer, **extra: str) -> dict[str, str]:
    return kernel_env(root / "home", LILY_EVENT_LOG="1", LILY_API_BASE=server.base_url,
                      OPENAI_API_KEY="sk-record-not-a-real-key-0000", **extra)


def test_run_all_after_a_restart_answers_from_the_record(server: OpenAIServer,
                                                         tmp_path: Path) -> None:
    workspace = workspace_for(tmp_path)
    path = workspace / "talk.ipynb"
    save(path, CELLS)
    env = env_for(tmp_path, server, JPY_SESSION_NAME=str(path))
    server.script(Reply(text="Four."), Reply(tool_calls=[tool_call("read", {"path": "notes.md"})]))
    first = run_all(path, env)
    asked = len(server.requests)
    assert asked == 4  # three cells, one of them in two steps
    answers = [shown(c) for c in first.cells[1:]]
    assert answers[1][0] == "Tool read: ran" and answers[2][0].startswith("Answer ")
    nbformat.write(first, path)

    again = run_all(path, env)  # restart, Run All
    assert len(server.requests) == asked  # no model call
    for before, after in zip(answers, (shown(c) for c in again.cells[1:]), strict=True):
        assert after[0].startswith(REPLAYED) and "/rerun asks the model afresh." in after[0]
        assert after[1:] == before  # the conversation comes back as it was

    sessions = sorted((workspace / ".lily" / "sessions").glob("*.jsonl"),
                      key=lambda p: p.stat().st_mtime)
    report = replay_session(sessions[-1], environ=env)
    assert report.identical, report.describe()

    # With the model unreachable and no key, the record still answers every cell; an
    # edited cell is the first that cannot be answered, and says why.
    offline = {**env, "LILY_API_BASE": UNREACHABLE}
    offline.pop("OPENAI_API_KEY")
    unreachable = run_all(path, offline)
    assert [shown(c)[1:] for c in unreachable.cells[1:]] == answers
    edited = copy.deepcopy(first)
    edited.cells[2].source = "Read my notes, please"
    nbformat.write(edited, path)
    failed = run_all(path, offline)
    assert shown(failed.cells[1])[0].startswith(REPLAYED)
    assert [o.output_type for o in failed.cells[2].outputs] == ["error"]
    assert failed.cells[2].outputs[0].ename == "ModelError"
    assert len(server.requests) == asked


def test_an_edited_cell_and_the_turns_after_it_ask_the_model(server: OpenAIServer,
                                                             tmp_path: Path) -> None:
    workspace = workspace_for(tmp_path)
    path = workspace / "talk.ipynb"
    save(path, CELLS)
    env = env_for(tmp_path, server)
    server.script(Reply(text="Four."), Reply(tool_calls=[tool_call("read", {"path": "notes.md"})]))
    run_all(path, env)
    asked = len(server.requests)
    save(path, (CELLS[0], ("lab-2", "Read my notes, please"), CELLS[2]))
    server.script(Reply(tool_calls=[tool_call("read", {"path": "notes.md"})]))
    again = run_all(path, env)
    assert len(server.requests) == asked + 3  # the edited cell in two steps, the next one
    assert shown(again.cells[1])[0].startswith(REPLAYED)
    assert not any(REPLAYED in line for c in again.cells[2:] for line in shown(c))
    fresh = run_all(path, {**env, "LILY_ANSWERS": "fresh"})
    assert len(server.requests) == asked + 3 + 3  # every cell asks (none calls a tool now)
    assert not any(REPLAYED in line for c in fresh.cells for line in shown(c))


def test_the_saved_notebook_wins_over_a_newer_unsaved_record(server: OpenAIServer,
                                                             tmp_path: Path) -> None:
    """Three cells answered and saved, then run again with LILY_ANSWERS=fresh and not
    saved: the record holds two answers of each first turn, the newer unsaved. Run All on
    the saved notebook replays the answers it shows, not the newest."""
    workspace = workspace_for(tmp_path)
    path = workspace / "talk.ipynb"
    save(path, CELLS)
    env = env_for(tmp_path, server, JPY_SESSION_NAME=str(path))
    plain = [(cell_id, text) for cell_id, text in CELLS if "notes" not in text]
    save(path, tuple(plain))
    saved = run_all(path, env)
    answers = [shown(c) for c in saved.cells[1:]]
    assert all(a[0].startswith("Answer ") for a in answers)
    nbformat.write(saved, path)

    unsaved = run_all(path, {**env, "LILY_ANSWERS": "fresh"})  # not written to the file
    newer = [shown(c) for c in unsaved.cells[1:]]
    assert all(a != b for a, b in zip(answers, newer, strict=True))
    asked = len(server.requests)

    again = run_all(path, env)
    assert len(server.requests) == asked  # no model call
    replayed = [shown(c) for c in again.cells[1:]]
    for before, after in zip(answers, replayed, strict=True):
        assert after[0].startswith(REPLAYED)
        assert after[1:] == before  # the answers the saved notebook shows
