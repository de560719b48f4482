"""The notebooks: golden transcripts under nbval, the quickstart and Run All under nbclient."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from nbformat.v4 import new_code_cell, new_notebook

from lily_kernel.execution.sandbox import find_sandbox
from lily_kernel.llm.local_files import find_embedded_model
from tests.kernel.conftest import REPO, WITHOUT_LOCAL_MODEL, kernel_env

NOTEBOOKS = REPO / "notebooks"
GOLDEN = NOTEBOOKS / "golden"
MIMETYPES = {"text/html", "text/markdown", "text/plain"}
RECORDED = "lily_recorded_with"  # a replayed golden cell's answers, for record.py


# The goldens as committed: a golden's record (`.lily/sessions`) with it, not the caches.
WITH_RECORDS = shutil.ignore_patterns(".ipynb_checkpoints", "index.sqlite*")
REPLAYED = GOLDEN / "replayed"
PYTHON_GOLDEN = GOLDEN / "python" / "python_turn.ipynb"


def _code_cells(nb: Any) -> list[Any]:
    return [c for c in nb.cells if c.cell_type == "code"]


def _nbval(folder: Path, env: dict[str, str], *names: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "--nbval", *names, "--nbval-kernel-name", "lily",
               "-p", "no:cacheprovider", "-q"]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True,
                          timeout=600)


def test_the_replayed_golden_passes_nbval_with_no_model(tmp_path: Path) -> None:
    """A notebook recorded with a model, committed with its record, passes nbval with no
    key and the model unreachable; a changed prompt fails at its cell, with the model's
    error (the first turn the record does not have)."""
    copy = tmp_path / "elsewhere" / "replayed"
    shutil.copytree(REPLAYED, copy, ignore=WITH_RECORDS)
    assert list((copy / ".lily" / "sessions").glob("*.jsonl")), "the record is committed"
    env = kernel_env(tmp_path / "home", LILY_API_BASE="http://127.0.0.1:9/v1")
    env.pop("OPENAI_API_KEY", None)
    done = _nbval(copy, env, "replayed.ipynb")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    cells = len(_code_cells(nbformat.read(copy / "replayed.ipynb", as_version=4)))
    assert re.search(rf"\b{cells} passed\b", done.stdout), done.stdout[-2000:]
    assert not (copy / ".lily" / "index.sqlite").exists()  # checking writes nothing
    nb = nbformat.read(copy / "replayed.ipynb", as_version=4)
    _code_cells(nb)[1].source = "Shout the day it ships, please"
    nbformat.write(nb, copy / "replayed.ipynb")
    changed = _nbval(copy, env, "replayed.ipynb")
    assert changed.returncode == 1
    # The changed cell fails, and the turn after it (its conversation so far changed).
    assert "2 failed, 1 passed" in changed.stdout, changed.stdout[-2000:]
    failed = re.findall(r"FAILED replayed.ipynb::Cell (\d+)", changed.stdout)
    assert failed == ["1", "2"]
    assert "Error: model call failed" in changed.stdout


def test_the_replayed_golden_is_answered_from_its_record_alone(tmp_path: Path) -> None:
    """Its stored outputs say so: each chat cell replayed, its tools run again."""
    nb = nbformat.read(REPLAYED / "replayed.ipynb", as_version=4)
    for cell in _code_cells(nb):
        first = cell.outputs[0].data["text/plain"]
        assert first.startswith("Replayed from the record: the answer openai/golden-model "
                                "gave on "), cell.source
        assert cell.metadata[RECORDED], "record.py records each chat cell's answers anew"


def test_golden_transcripts_pass_nbval(tmp_path: Path) -> None:
    """All of them pass, run by nbval from a copy in a folder whose path is longer than
    the checkout's (paths differ in length between machines: the goldens must not depend
    on it; one run serves both); where there is no bubblewrap (and not under CI, where it
    must be), the golden that runs code is skipped, cell by cell, saying why."""
    notebooks = [nbformat.read(p, as_version=4) for p in sorted(GOLDEN.rglob("*.ipynb"))]
    cells = sum(len(_code_cells(nb)) for nb in notebooks)
    assert len(notebooks) >= 4 and cells >= 30
    sandboxed = sum(len(_code_cells(nb)) for nb in notebooks
                    if nb.metadata.get("lily_needs_sandbox"))
    assert sandboxed >= 3, "a golden runs code (the python tool and /python)"
    skipped = 0 if find_sandbox(os.environ).available or os.environ.get("CI") == "true" \
        else sandboxed
    copy = tmp_path / "a-folder-with-a-much-longer-name-than-the-checkout" / "repo"
    golden = copy / "notebooks" / "golden"
    shutil.copytree(GOLDEN, golden, ignore=WITH_RECORDS)
    shutil.copytree(REPO / "tests" / "support", copy / "tests" / "support")
    (copy / "tests" / "__init__.py").write_text("")
    command = [sys.executable, "-m", "pytest", "--nbval", "notebooks/golden",
               "--nbval-kernel-name", "lily", "-p", "no:cacheprovider",
               "--nbval-sanitize-with", "notebooks/golden/sanitize.cfg", "-q"]
    # As without the `local` extra: the goldens show the no-model error, reproducibly.
    done = subprocess.run(command, cwd=copy,
                          env=kernel_env(tmp_path / "home", **WITHOUT_LOCAL_MODEL),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.search(rf"\b{cells - skipped} passed\b", done.stdout), done.stdout[-2000:]
    if skipped:
        assert re.search(rf"\b{skipped} skipped\b", done.stdout), done.stdout[-2000:]
    assert not (golden / "skills" / "late_arrival").exists()
    # The subkernel's sandbox left no mount point behind (nbval kills the kernel). Lily's
    # own folder may be there: .lily/ is made before a run that could write there, and
    # holds the workspace's environment (.lily/venv, execution/installs.py); it is
    # ignored by git, and nothing was set aside in it (.lily/removed: no phantom file).
    python_golden = golden / PYTHON_GOLDEN.relative_to(GOLDEN)
    left = sorted(p.name for p in python_golden.parent.iterdir())
    assert [name for name in left if name != ".lily"] == ["lily.yaml", "python_turn.ipynb"]
    if ".lily" in left:
        assert sorted(p.name for p in (python_golden.parent / ".lily").iterdir()) == ["venv"]


def test_golden_transcripts_store_no_machine_specific_text() -> None:
    for path in sorted(GOLDEN.rglob("*.ipynb")):
        text = path.read_text(encoding="utf-8")
        assert str(REPO) not in text, path.name
        assert not re.search(r"digest [0-9a-f]{12}", text), path.name
        nb = nbformat.read(path, as_version=4)
        assert nb.metadata.kernelspec.name == "lily"
        for cell in _code_cells(nb):
            assert cell.execution_count is not None and cell.outputs, (path.name, cell.source)
            assert not cell.source.lstrip().startswith("#"), "use cell tags, not comments"
            errors = [o for o in cell.outputs if o.output_type == "error"]
            assert bool(errors) == ("raises-exception" in cell.metadata.get("tags", [])), (
                path.name, cell.source)


def _run_notebook(nb: Any, workspace: Path, home: Path) -> None:
    client = NotebookClient(nb, kernel_name="lily", timeout=120, record_timing=False,
                            resources={"metadata": {"path": str(workspace)}})
    client.execute(env=kernel_env(home))


@pytest.mark.skipif(find_embedded_model() is None,
                    reason="the quickstart's chat cells need the `local` extra (./setup.sh)")
def test_quickstart_runs_top_to_bottom(tmp_path: Path) -> None:
    """The README's main job as a new user runs it, nothing configured, so the embedded
    model answers: `lily run` (a real subprocess) prints the transcript and writes the
    executed notebook, whose every cell is then checked (one run of the embedded model
    serves both: it is the suite's slowest notebook). The README's command, `.venv/bin/lily
    run`: the quickstart under `lily run` as tests/kernel/test_runners.py checks the other
    runners."""
    out = tmp_path / "executed.ipynb"
    done = subprocess.run([str(Path(sys.executable).parent / "lily"), "run",
                           "notebooks/quickstart.ipynb", "--output", str(out)],
                          # Answers of at most 256 tokens (1,024 by default), as in
                          # tests/llm/test_kernel_local_model.py: three whole answers, in a
                          # fraction of the time on a loaded machine.
                          cwd=REPO, env=kernel_env(tmp_path / "home", LILY_MAX_TOKENS="256"),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "without encryption" not in done.stderr  # as under the other runners (test_runners.py)
    assert done.stdout.startswith("In [1]: /help\n    Lily commands\n")
    nb = nbformat.read(out, as_version=4)
    assert all(c.execution_count for c in _code_cells(nb))
    outputs: dict[str, list[Any]] = {}
    chats = []
    for cell in _code_cells(nb):
        kinds = [o.output_type for o in cell.outputs]
        assert "error" not in kinds, (cell.source, cell.outputs)
        if cell.source.startswith("/python "):  # the code shown, then what it gave
            assert kinds == ["display_data", "display_data"], cell.outputs
        elif cell.source.startswith("/") and not cell.source.startswith("/haiku"):
            assert kinds == ["display_data"], cell.source
            assert set(cell.outputs[0].data) == MIMETYPES
        else:
            chats.append(cell)
        outputs[cell.source] = cell.outputs

    def plain(source: str) -> str:
        return str(outputs[source][0].data["text/plain"])

    commands = {"/help", "/skills", "/help haiku", "/peek lily.yaml", "/ls skills",
                "/skill workspace-files persona", "/agent", "/agent reviewer",
                "/agent default", "/reload_skills", "/python"}
    assert commands <= set(outputs), "the tour covers every command"
    assert re.search(r"^haiku +Answer in a single haiku\. +workspace +prompt_rewrite +/haiku$",
                     plain("/skills"), re.M)
    assert "/peek [request]" in plain("/help")
    assert "agent: default" in plain("/peek lily.yaml")
    assert "haiku/" in plain("/ls skills") and "peek/" in plain("/ls skills")
    assert "reviewer/" in plain("/skill workspace-files persona")
    assert plain("/agent reviewer").startswith("Switched to agent reviewer")
    assert "No changes." in plain("/reload_skills")
    # The person's own Python, in the sandboxed kernel: the code, then its value.
    ran = outputs["/python import statistics\nscores = [3, 5, 8, 13]\nstatistics.mean(scores)"]
    assert "statistics.mean(scores)" in ran[0].data["text/plain"]
    assert ran[1].data["text/plain"] == "7.25"
    assert "scores" in plain("/python") and "statistics" in plain("/python")
    # Three chat cells, each answered (Markdown) with the footer naming the local model;
    # no line of an answer comes twice, in it or in another answer (the small model
    # copied its last answer whole before DRY saw the conversation).
    assert len(chats) == 3
    seen: set[str] = set()
    for cell in chats:
        replies = [o.data["text/plain"] for o in cell.outputs if "lily-reply" in o.data.get("text/html", "")]
        assert replies, cell.source
        assert "-- SmolLM2-135M-Instruct (local) · " in replies[-1], replies[-1]
        answer = replies[-1].split("\n-- SmolLM2")[0]
        lines = [line.strip() for line in answer.splitlines() if len(line.strip()) >= 20]
        assert not set(lines) & seen and len(set(lines)) == len(lines), (cell.source, answer)
        seen.update(lines)


def test_the_quickstart_has_no_command_that_fails_on_purpose() -> None:
    """papermill fails a notebook on any error output, whatever its tags."""
    nb = nbformat.read(NOTEBOOKS / "quickstart.ipynb", as_version=4)
    for cell in _code_cells(nb):
        if "raises-exception" in cell.metadata.get("tags", []):
            raise AssertionError(f"no quickstart cell may be expected to fail: {cell.source}")


def test_the_quickstart_names_everything_in_its_workspace() -> None:
    intro = nbformat.read(NOTEBOOKS / "quickstart.ipynb", as_version=4).cells[0].source
    shown = sorted(p.name for p in NOTEBOOKS.iterdir()
                   if not p.name.startswith(".") and p.name != "quickstart.ipynb")
    assert shown, "the workspace holds more than the notebook"
    for name in shown:
        assert f"`{name}" in intro, f"the quickstart never mentions {name}"


def test_run_all_stops_at_the_first_failing_cell(tmp_path: Path) -> None:
    nb = new_notebook(cells=[new_code_cell("/skills"), new_code_cell("/skil echo"),
                             new_code_cell("/help")])
    with pytest.raises(CellExecutionError) as failure:
        _run_notebook(nb, tmp_path, tmp_path / "home")
    assert "Error: unknown command /skil." in str(failure.value)
    assert failure.value.ename == "CommandError"
    first, failed, never_ran = nb.cells
    assert first.outputs[0].output_type == "display_data"
    assert failed.outputs[0].output_type == "error"
    assert never_ran.outputs == [] and never_ran.execution_count is None


def test_chat_transcript_scripts_every_model_turn() -> None:
    """Every chat cell of the chat golden carries the replies its model turn consumes."""
    nb = nbformat.read(GOLDEN / "chat" / "chat.ipynb", as_version=4)
    chat_cells = [c for c in _code_cells(nb) if not c.source.lstrip().startswith("/")
                  or c.source.startswith(("/skill echo", "/plan"))]
    assert len(chat_cells) >= 7
    for cell in chat_cells:
        assert cell.metadata.get("lily_scripted_replies"), cell.source
    texts = "\n".join(str(o.get("data", {}).get("text/plain", o.get("evalue", "")))
                      for c in chat_cells for o in c.outputs)
    for shown in ("Skill: echo (selected by the model)", "Tool read: ran",
                  "Tool list: refused: tool 'list' is not allowed by the tool policy",
                  "only one skill can be used per request", "rate limit"):
        assert shown in texts


def test_the_python_golden_runs_the_models_code_then_the_persons() -> None:
    """Its stored outputs: the model's `python` call shown as code, what it printed and
    the table it displayed; then `/python` reading the variables that code defined."""
    nb = nbformat.read(PYTHON_GOLDEN, as_version=4)
    assert nb.metadata.get("lily_needs_sandbox") is True
    turn, person, *_ = _code_cells(nb)
    [call] = turn.metadata["lily_scripted_replies"][0]["tool_calls"]
    code = json.loads(call["arguments"])["code"]
    assert call["name"] == "python" and "total = " in code
    shown = [o.get("data", {}) for o in turn.outputs]
    assert shown[0]["text/markdown"] == f"```python\n{code}\n```"
    printed = [o.text for o in turn.outputs if o.output_type == "stream"]
    assert printed == ["sum of the squares of 1 to 5: 55\n"]
    assert any("<table>" in d.get("text/html", "") for d in shown)
    assert person.source.startswith("/python") and "total" in person.source
    assert [o.text for o in person.outputs if o.output_type == "stream"] == ["55 25\n"]
