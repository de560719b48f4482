"""The sessions behind the golden transcripts replay as identical.

Each golden notebook runs again (nbclient, a real kernel, the event log on, the harness
playing the person's hands and the scripted model), in a copy of the golden folder; its
session log is then replayed with `replay_session` against the same files and the
kernel's environment, with the harness doing between cells, in replay's scratch copy of
the workspace, what it did during the recording.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from lily_kernel.replay import replay_session
from tests.core.test_scripts import sandbox_or_skip
from tests.kernel.conftest import REPO, WITHOUT_LOCAL_MODEL, kernel_env
from tests.support.openai_server import OpenAIServer, Reply

GOLDEN = REPO / "notebooks" / "golden"
NOTEBOOKS = sorted(p.relative_to(GOLDEN).as_posix() for p in GOLDEN.rglob("*.ipynb"))


def _harness(folder: Path) -> Any:
    spec = importlib.util.spec_from_file_location("golden_harness_copy",
                                                  folder / "golden_harness.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def golden_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("golden-replay") / "golden"
    # As committed: a golden's record (.lily/sessions) with it, no cache.
    shutil.copytree(GOLDEN, folder,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "index.sqlite*"))
    return folder


def _code_cells(nb: Any) -> list[Any]:
    # nbclient sends no execute request for an empty code cell: no `cell` event either.
    return [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_golden_session_replays_as_identical(name: str, golden_copy: Path,
                                             tmp_path: Path) -> None:
    harness = _harness(golden_copy)
    path = golden_copy / name
    workspace = path.parent
    sessions = workspace / ".lily" / "sessions"
    before = set(sessions.glob("*.jsonl")) if sessions.is_dir() else set()
    nb = nbformat.read(path, as_version=4)
    if nb.metadata.get("lily_needs_sandbox"):  # python/: it runs code in bubblewrap
        sandbox_or_skip()
    cells = _code_cells(nb)
    late = {i for i, c in enumerate(cells) if harness.LATE_SKILL_TAG in c.metadata.get("tags", [])}

    with OpenAIServer() as server:
        # As regenerate.py records them: without the embedded model, so a chat cell with
        # no model configured fails at once, as the golden shows (with it, SmolLM2 would
        # answer `/plan my week` at length: past nbclient's 120 s on a loaded machine).
        env = kernel_env(tmp_path / "home", LILY_EVENT_LOG="1", LILY_API_BASE=server.base_url,
                         OPENAI_API_KEY=harness.DUMMY_KEY, **WITHOUT_LOCAL_MODEL)
        def on_cell(cell: Any, cell_index: int, **_: Any) -> None:
            if harness.LATE_SKILL_TAG in cell.metadata.get("tags", []):
                harness.add_late_skill()
            if harness.SCRIPTED_REPLIES in cell.metadata:
                server.replies.clear()
                server.script(*(Reply(**r) for r in cell.metadata[harness.SCRIPTED_REPLIES]))

        client = NotebookClient(nb, kernel_name="lily", timeout=120, allow_errors=True,
                                record_timing=False, on_cell_execute=on_cell,
                                resources={"metadata": {"path": str(workspace)}})
        client.execute(env=env)
    harness.remove_late_skill()
    [log] = set(sessions.glob("*.jsonl")) - before
    recorded_cells = [line for line in log.read_text().splitlines() if '"event": "cell"' in line]
    assert len(recorded_cells) == len(cells)

    def before_cell(index: int, folder: Path) -> None:
        if index in late:  # what harness.add_late_skill() did, in the folder replayed
            late_skill = folder / harness.LATE_SKILL.relative_to(harness.HERE)
            late_skill.mkdir(parents=True, exist_ok=True)
            (late_skill / "SKILL.md").write_text(harness.LATE_SKILL_TEXT, encoding="utf-8")

    report = replay_session(log, before_cell=before_cell, environ=env)
    assert not harness.LATE_SKILL.exists()  # the copy had it, never the golden folder
    assert report.identical, report.describe()
    assert report.cells == len(cells) and report.events > 2 * len(cells)
    if "chat" in name:  # the model's turns were fed from the log, faults included
        text = log.read_text()
        assert text.count('"event": "model_call"') >= 8 and '"outcome": "rate_limit"' in text
    if late:  # without the person's hands between cells, the reload finds no newcomer
        unaided = replay_session(log, environ=env)
        assert unaided.divergence is not None
        assert unaided.divergence.event == "command"
        assert unaided.divergence.expected is not None
        assert unaided.divergence.expected["data"]["name"] == "reload_skills"
        assert "differs in output_chars, output_sha256" in unaided.describe()
