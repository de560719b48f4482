"""A renamed notebook keeps its conversation (issue 37, item 7): JupyterLab asks to rename
`Untitled.ipynb` on its first save, and the kernel is not told (its JPY_SESSION_NAME
keeps the old name). The record follows the notebook by its cells' ids: within the
session (the next turn is recorded under the new name), and when the renamed notebook
is reopened (its turns recorded under the old name are continued). Real runtime,
scripted model, notebooks saved by nbformat as JupyterLab saves them."""

from __future__ import annotations

from pathlib import Path

from tests.llm.test_record import events, run, start
from tests.llm.test_record_notebook import ANSWERS, CELLS, save, users
from tests.llm.test_skill_tools import reply


def _untitled(workspace: Path, environ: dict[str, str], cells: int) -> Path:
    """A new notebook's first turns, recorded while it is still `Untitled.ipynb`."""
    untitled = workspace / "Untitled.ipynb"
    save(untitled, CELLS)
    runtime = start(workspace, environ, JPY_SESSION_NAME=str(untitled))
    for (cell_id, code), answer in list(zip(CELLS, ANSWERS, strict=True))[:cells]:
        run(runtime, code, reply(answer), cell_id=cell_id)
    runtime.close()
    return untitled


def test_a_notebook_renamed_after_its_first_turns_continues_them_when_reopened(
        workspace: Path, environ: dict[str, str]) -> None:
    untitled = _untitled(workspace, environ, cells=3)
    renamed = untitled.rename(workspace / "analysis.ipynb")  # the first save's rename
    again = start(workspace, environ, JPY_SESSION_NAME=str(renamed))
    model, sink = run(again, "Which was my first question?", reply("2+2."), cell_id="c-new")
    assert users(model.requests[0].messages) == [*(c for _, c in CELLS),
                                                 "Which was my first question?"]
    assert any(n.startswith("Continuing this notebook's conversation of ")
               for n in sink.notices), sink.notices
    assert events(again, "turn")[-1]["notebook"] == "analysis.ipynb"
    again.close()


def test_a_notebook_renamed_while_its_kernel_runs_is_followed(
        workspace: Path, environ: dict[str, str]) -> None:
    untitled = workspace / "Untitled.ipynb"
    save(untitled, CELLS)
    runtime = start(workspace, environ, JPY_SESSION_NAME=str(untitled))
    (first, code), answer = CELLS[0], ANSWERS[0]
    run(runtime, code, reply(answer), cell_id=first)
    untitled.rename(workspace / "analysis.ipynb")  # the kernel keeps its old name
    (second, code), answer = CELLS[1], ANSWERS[1]
    run(runtime, code, reply(answer), cell_id=second)
    assert [t["notebook"] for t in events(runtime, "turn")] == ["Untitled.ipynb",
                                                                 "analysis.ipynb"]
    runtime.close()
    again = start(workspace, environ, JPY_SESSION_NAME=str(workspace / "analysis.ipynb"))
    model, _ = run(again, "And now?", reply("Go on."), cell_id="c-new")
    assert users(model.requests[0].messages) == [CELLS[0][1], CELLS[1][1], "And now?"]
    again.close()


def test_another_notebook_with_none_of_its_cells_does_not_take_it_up(
        workspace: Path, environ: dict[str, str]) -> None:
    untitled = _untitled(workspace, environ, cells=2)
    untitled.unlink()  # deleted, not renamed
    other = workspace / "other.ipynb"
    save(other, (("o-one", "Hello"),))
    again = start(workspace, environ, JPY_SESSION_NAME=str(other))
    model, _ = run(again, "Hello", reply("Hi."), cell_id="o-one")
    assert users(model.requests[0].messages) == ["Hello"]
    again.close()
