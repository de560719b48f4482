"""The quickstart under every notebook runner a person may use, as they run them.

papermill fails a notebook on any error output whatever its tags, so the quickstart
holds no cell that fails on purpose; nbclient, `jupyter execute` and `lily run` honour
`raises-exception`. The chat cells are answered by the loopback OpenAI-compatible
server (a model is configured), so every cell must come out clean. `lily run` is the
fourth runner: tests/kernel/test_notebooks.py's test_quickstart_runs_top_to_bottom runs
the quickstart with it (the embedded model answering) and checks every cell the same
way, so it is not run a second time here.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from tests.kernel.conftest import REPO, kernel_env
from tests.support.openai_server import OpenAIServer, Reply

BIN = Path(sys.executable).parent
RUNNERS = {
    "papermill": lambda nb, out: [str(BIN / "papermill"), "--no-progress-bar", "--cwd",
                                  str(nb.parent), str(nb), str(out)],
    "jupyter execute": lambda nb, out: [str(BIN / "jupyter"), "execute", str(nb),
                                        f"--output={out.stem}"],
    "nbclient": lambda nb, out: [sys.executable, "-c",
                                 "import sys, nbformat; from nbclient import NotebookClient; "
                                 "nb = nbformat.read(sys.argv[1], as_version=4); "
                                 "NotebookClient(nb, resources={'metadata': {'path': sys.argv[3]}}"
                                 ").execute(); nbformat.write(nb, sys.argv[2])",
                                 str(nb), str(out), str(nb.parent)],
}


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(default=Reply(text="A scripted answer from the loopback model.")) as srv:
        yield srv


@pytest.mark.parametrize("runner", list(RUNNERS))
def test_the_quickstart_runs_clean_under_every_runner(tmp_path: Path, server: OpenAIServer,
                                                      runner: str) -> None:
    workspace = tmp_path / "notebooks"
    shutil.copytree(REPO / "notebooks", workspace,
                    ignore=shutil.ignore_patterns(".lily", ".ipynb_checkpoints", "golden"))
    notebook, out = workspace / "quickstart.ipynb", workspace / "executed.ipynb"
    env = kernel_env(tmp_path / "home", LILY_MODEL="openai/quickstart",
                     LILY_API_BASE=server.base_url, OPENAI_API_KEY="loopback-test-key")
    done = subprocess.run(RUNNERS[runner](notebook, out), cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    executed = nbformat.read(out, as_version=4)
    code = [c for c in executed.cells if c.cell_type == "code"]
    assert code and all(c.execution_count for c in code)
    errors = [(c.source, o.get("evalue")) for c in code for o in c.outputs
              if o.output_type == "error"]
    assert errors == []
    chat = [c for c in code if not c.source.startswith("/") or c.source.startswith("/haiku")]
    assert chat and all("A scripted answer" in str(c.outputs) for c in chat)
    assert "without encryption" not in done.stderr
