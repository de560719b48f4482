"""`lily run NOTEBOOK` (the README's main job) as a person runs it: a real subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from tests.kernel.conftest import REPO, kernel_env

LILY = [sys.executable, "-m", "lily_kernel.cli.main", "run"]


def test_quickstart_runs_and_prints_its_transcript(tmp_path: Path) -> None:
    out = tmp_path / "executed.ipynb"
    done = subprocess.run([*LILY, "notebooks/quickstart.ipynb", "--output", str(out)],
                          cwd=REPO, env=kernel_env(tmp_path / "home"), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("In [1]: /help\n    Lily commands\n")
    assert "In [11]: /skils\n    CommandError: Error: unknown command /skils.\n" in done.stdout
    executed = nbformat.read(out, as_version=4)
    assert all(c.execution_count for c in executed.cells if c.cell_type == "code")


def test_an_unexpected_error_stops_the_run_with_status_1(tmp_path: Path) -> None:
    path = tmp_path / "broken.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("/skills"), new_code_cell("/nope"),
                                       new_code_cell("/help")]), path)
    done = subprocess.run([*LILY, str(path)], env=kernel_env(tmp_path / "home"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "stopped at a failing cell: CommandError: Error: unknown command /nope." in done.stderr
    assert "In [2]: /nope" in done.stdout and "/help" not in done.stdout
