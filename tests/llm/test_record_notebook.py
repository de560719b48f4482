"""A reopened notebook continues its recorded conversation (scripted model, real runtime,
notebooks saved by nbformat as JupyterLab saves them): the earlier turns still in the
notebook, in order; deleted cells left out and named; the notebook learned from
LILY_NOTEBOOK / JPY_SESSION_NAME or VS Code's cell URIs (docs/sessions.md)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from lily_kernel.replay import replay_session
from tests.llm.test_record import events, run, start
from tests.llm.test_skill_tools import reply
from tests.support.sink import RecordingSink

CELLS = (("c-one", "What is 2+2?"), ("c-two", "Name a colour"), ("c-three", "And a fruit?"))
ANSWERS = ("Four.", "Blue.", "Apple.")


def save(path: Path, cells: tuple[tuple[str, str], ...]) -> None:
    """The notebook as JupyterLab saves it: cell ids, a markdown cell, outputs aside."""
    nb = new_notebook(cells=[new_markdown_cell("# Talk")])
    for cell_id, code in cells:
        cell = new_code_cell(code)
        cell.id = cell_id
        nb.cells.append(cell)
    nbformat.write(nb, path)


def record(workspace: Path, environ: dict[str, str], **settings: str) -> Path:
    notebook = workspace / "talk.ipynb"
    save(notebook, CELLS)
    runtime = start(workspace, environ, **settings)
    for (cell_id, code), answer in zip(CELLS, ANSWERS, strict=True):
        run(runtime, code, reply(answer), cell_id=cell_id)
    runtime.close()
    return notebook


def users(messages: list[dict[str, object]]) -> list[object]:
    return [m["content"] for m in messages if m["role"] == "user"]


def test_a_new_cell_continues_the_notebooks_recorded_conversation(workspace,
                                                                  environ) -> None:
    notebook = record(workspace, environ, LILY_NOTEBOOK="talk.ipynb")
    again = start(workspace, environ, LILY_NOTEBOOK=str(notebook))
    model, sink = run(again, "Which was my first question?", reply("2+2."), cell_id="c-new")
    assert users(model.requests[0].messages) == [*(c for _, c in CELLS),
                                                 "Which was my first question?"]
    assert [m["content"] for m in model.requests[0].messages if m["role"] == "assistant"] \
        == list(ANSWERS)
    [said] = sink.notices
    assert said.startswith("Continuing this notebook's conversation of ")
    assert said.endswith("the model reads its 3 earlier turn(s) again. /new starts afresh.")
    # Said once: the next cell goes on with the conversation as it now is.
    model, sink = run(again, "Thanks", reply("Welcome."), cell_id="c-new2")
    assert not sink.notices and len(users(model.requests[0].messages)) == 5
    assert [e["how"] for e in events(again, "conversation")] == ["continued"]
    again.close()
    assert again.log.path is not None
    report = replay_session(again.log.path, environ=again.env.host.environ)
    assert report.identical, report.describe()


def test_turns_whose_cells_were_deleted_are_left_out_and_named(workspace, environ) -> None:
    notebook = record(workspace, environ, LILY_NOTEBOOK="talk.ipynb")
    save(notebook, (CELLS[0], CELLS[2]))  # the person deleted the second cell, and saved
    again = start(workspace, environ, LILY_NOTEBOOK=str(notebook))
    model, sink = run(again, "Go on", reply("Gone on."), cell_id="c-new")
    assert users(model.requests[0].messages) == [CELLS[0][1], CELLS[2][1], "Go on"]
    assert sink.notices[0].endswith("the model reads its 2 earlier turn(s) again. /new "
                                    "starts afresh.")
    assert sink.notices[1] == ("Left out of the conversation, their cells are no longer in "
                               "the notebook: 'Name a colour'.")
    assert events(again, "conversation")[0]["left_out"] == ["Name a colour"]
    again.close()


def test_a_recorded_cell_run_again_after_a_reopen_is_replayed(workspace, environ) -> None:
    """Reopened, the person runs the third cell alone: the turns above it are taken up,
    and with them its recorded turn's key: it is answered from the record."""
    notebook = record(workspace, environ, LILY_NOTEBOOK="talk.ipynb")
    again = start(workspace, environ, LILY_NOTEBOOK=str(notebook))
    _, sink = run(again, CELLS[2][1], cell_id=CELLS[2][0])
    assert sink.replies == ["Apple."]
    assert sink.notices[0].endswith("reads its 2 earlier turn(s) again. /new starts afresh.")
    assert sink.notices[1].startswith("Replayed from the record")
    again.close()


def test_run_all_after_a_reopen_replays_without_continuing(workspace, environ) -> None:
    notebook = record(workspace, environ, LILY_NOTEBOOK="talk.ipynb")
    again = start(workspace, environ, LILY_NOTEBOOK=str(notebook))
    sinks = [run(again, code, cell_id=cell_id)[1] for cell_id, code in CELLS]
    assert [s.replies for s in sinks] == [[a] for a in ANSWERS]
    assert all(len(s.notices) == 1 and s.notices[0].startswith("Replayed") for s in sinks)
    assert events(again, "conversation") == []
    again.close()


def test_without_a_known_notebook_nothing_is_continued(workspace, environ) -> None:
    record(workspace, environ, LILY_NOTEBOOK="talk.ipynb")
    again = start(workspace, environ)  # no LILY_NOTEBOOK, no JPY_SESSION_NAME, no URI
    model, sink = run(again, "Which was my first question?", reply("I do not know."),
                      cell_id="c-new")
    assert users(model.requests[0].messages) == ["Which was my first question?"]
    assert not sink.notices
    again.close()


def test_jpy_session_name_names_the_notebook(workspace, environ) -> None:
    notebook = record(workspace, environ, JPY_SESSION_NAME=str(workspace / "talk.ipynb"))
    again = start(workspace, environ, JPY_SESSION_NAME=str(notebook))
    model, _ = run(again, "More?", reply("More."), cell_id="c-new")
    assert len(users(model.requests[0].messages)) == 4
    again.close()


def test_vscode_cell_uris_name_the_notebook(workspace, environ) -> None:
    notebook = workspace / "talk.ipynb"
    uri = f"vscode-notebook-cell:{notebook.as_posix().replace(' ', '%20')}#W{{}}sZmlsZQ%3D%3D"
    save(notebook, CELLS)
    runtime = start(workspace, environ)
    for n, ((_, code), answer) in enumerate(zip(CELLS, ANSWERS, strict=True)):
        run(runtime, code, reply(answer), cell_id=uri.format(n))
    runtime.close()
    assert {t["notebook"] for t in events(runtime, "turn")} == {"talk.ipynb"}
    again = start(workspace, environ)
    model, sink = run(again, "More?", reply("More."), cell_id=uri.format(9))
    # VS Code's cell URIs are not the saved cells' ids: the turns are found by their code.
    assert len(users(model.requests[0].messages)) == 4
    assert sink.notices[0].startswith("Continuing this notebook's conversation")
    again.close()


def test_an_unreadable_notebook_is_said_and_nothing_is_continued(workspace, environ) -> None:
    notebook = record(workspace, environ, LILY_NOTEBOOK="talk.ipynb")
    notebook.write_text("{ not json")
    again = start(workspace, environ, LILY_NOTEBOOK=str(notebook))
    model, sink = run(again, "More?", reply("More."), cell_id="c-new")
    assert users(model.requests[0].messages) == ["More?"]
    assert sink.notices == [f"This notebook's recorded conversation (3 turn(s) of "
                            f"{sink.notices[0].split(' of ')[1].split(')')[0]}) is not "
                            f"continued: {notebook} is not a notebook (not JSON)."]
    again.close()


def test_new_before_the_first_cell_keeps_the_conversation_empty(workspace, environ) -> None:
    notebook = record(workspace, environ, LILY_NOTEBOOK="talk.ipynb")
    again = start(workspace, environ, LILY_NOTEBOOK=str(notebook))
    run(again, "/new")
    model, sink = run(again, "Hello", reply("Hi."), cell_id="c-new")
    assert users(model.requests[0].messages) == ["Hello"] and not sink.notices
    again.close()


def test_resume_of_this_notebooks_conversation_leaves_deleted_cells_out(workspace,
                                                                        environ) -> None:
    notebook = record(workspace, environ, LILY_NOTEBOOK="talk.ipynb")
    save(notebook, (CELLS[1],))
    again = start(workspace, environ, LILY_NOTEBOOK=str(notebook))
    run(again, "/new")
    book = again.record
    assert book is not None
    [recorded] = [c for c in book.conversations() if c.turns == 3]
    run(again, f"/resume {recorded.id[:6]}", sink=RecordingSink())
    assert users(again.session.conversation_state.messages) == [CELLS[1][1]]
    assert events(again, "conversation")[-1]["left_out"] == [CELLS[0][1], CELLS[2][1]]
    again.close()


def test_a_crafted_turn_is_left_out_of_the_conversation_not_a_crash(workspace,
                                                                    environ) -> None:
    """A record is data: a turn whose messages are not the turn engine's (a content that
    is no text, a role no turn writes) is left out, and said; the others continue."""
    notebook = record(workspace, environ, LILY_NOTEBOOK="talk.ipynb")
    [log] = (workspace / ".lily" / "sessions").glob("*.jsonl")
    lines = []
    for line in log.read_text().splitlines():
        event = json.loads(line)
        if event["event"] == "turn" and event["data"]["text"] == CELLS[1][1]:
            event["data"]["messages"] = [{"role": "system", "content": 5}]
        lines.append(json.dumps(event))
    log.write_text("\n".join(lines) + "\n")
    (workspace / ".lily" / "index.sqlite").unlink()
    again = start(workspace, environ, LILY_NOTEBOOK=str(notebook))
    model, sink = run(again, "Go on", reply("Gone on."), cell_id="c-new")
    assert users(model.requests[0].messages) == [CELLS[0][1], CELLS[2][1], "Go on"]
    assert sink.notices[1] == ("Left out of the conversation, their record cannot be read: "
                               "'Name a colour'.")
    again.close()


def test_an_empty_answer_is_never_the_one_a_saved_cell_shows() -> None:
    """Of several recordings of a turn, the one the saved cell shows wins: an answer
    whose last text is empty is in every cell's text, so it is never taken as shown."""
    from lily_kernel.record.answers import _answer_shown

    empty = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "  "}]
    said = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello there."}]
    assert not _answer_shown(empty, "Hello there.\n-- model")
    assert _answer_shown(said, "Hello there.\n-- model")
    assert not _answer_shown(said, "Goodbye.\n-- model")
