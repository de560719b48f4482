"""`lily run NOTEBOOK` (the README's main job) as a person runs it: a real subprocess. The
quickstart's own run is tests/kernel/test_notebooks.py's test_quickstart_runs_top_to_bottom."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from tests.kernel.conftest import REPO, kernel_env

LILY = [sys.executable, "-m", "lily_kernel.cli.main", "run"]


def test_an_unexpected_error_stops_the_run_with_status_1(tmp_path: Path) -> None:
    path = tmp_path / "broken.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("/skills"), new_code_cell("/nope"),
                                       new_code_cell("/help")]), path)
    done = subprocess.run([*LILY, str(path)], env=kernel_env(tmp_path / "home"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert done.stderr.endswith(
        "stopped at a failing cell: Error: unknown command /nope.\n")  # said once
    assert "In [2]: /nope\n    Error: unknown command /nope.\n" in done.stdout
    assert "/help" not in done.stdout


def test_bad_arguments_are_one_line_and_exit_2_before_any_cell_runs(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    notebook = workspace / "fine.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("/skills")]), notebook)
    (workspace / "README.md").write_text("# Not a notebook\n")
    env = kernel_env(tmp_path / "home", LILY_EVENT_LOG="1")
    cases = {
        "missing.ipynb": f"lily: {workspace / 'missing.ipynb'}: no such file.\n",
        "README.md": f"lily: {workspace / 'README.md'}: not a Jupyter notebook (",
        "fine.ipynb --output nowhere/out.ipynb": (
            f"lily: --output {workspace / 'nowhere' / 'out.ipynb'}: the folder "
            f"{workspace / 'nowhere'} does not exist.\n"),
        f"fine.ipynb --output {workspace}": f"lily: --output {workspace}: is a folder",
    }
    for args, said in cases.items():
        argv = [str(workspace / args.split()[0]), *args.split()[1:]]
        if "--output" in argv and not argv[-1].startswith("/"):
            argv[-1] = str(workspace / argv[-1])
        done = subprocess.run([*LILY, *argv], env=env, capture_output=True, text=True,
                              timeout=300)
        assert (done.returncode, done.stdout) == (2, ""), (args, done.stderr)
        assert done.stderr.startswith(said) and done.stderr.count("\n") == 1, done.stderr
        assert "Traceback" not in done.stderr
    assert not (workspace / ".lily").exists(), "a kernel started: a cell could have run"


def test_a_failing_cell_is_reported_whole_however_many_lines(tmp_path: Path) -> None:
    """A Lily error of several lines (no model configured) is said whole, not its last line."""
    from lily_kernel.display.messages import NO_MODEL_MESSAGE

    path = tmp_path / "chat.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("hello")]), path)
    hidden = str(REPO / "tests" / "support" / "hide_local_model")
    done = subprocess.run([*LILY, str(path)], env=kernel_env(tmp_path / "home",
                                                              PYTHONPATH=hidden),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert done.stderr.endswith(f"stopped at a failing cell: Error: {NO_MODEL_MESSAGE}\n")
    assert NO_MODEL_MESSAGE.count("\n") >= 3


def test_the_transcript_shows_escape_codes_as_they_are(tmp_path: Path) -> None:
    """A downloaded notebook's cells (and what comes back) reach the terminal with their
    escape codes visible: `\\x1b[2K\\x1b[1A` would erase and rewrite what the person reads."""
    folder = tmp_path / "dl\x1b[2K"
    folder.mkdir()
    path = folder / "n.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("/nope\x1b[2K\x1b[1A\u202e")]), path)
    done = subprocess.run([*LILY, str(path)], env=kernel_env(tmp_path / "home"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert not any(c in done.stdout + done.stderr for c in "\x1b\u202e")
    assert "In [1]: /nope\\x1b[2K\\x1b[1A\\u202e\n" in done.stdout
    assert "dl\\x1b[2K/n.ipynb stopped at a failing cell" in done.stderr
