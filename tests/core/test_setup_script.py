"""setup.sh's last line, run for real with its installer steps stood in for (no pip)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


def _run_setup(tmp_path: Path, kernels: list[str],
               **env: str) -> subprocess.CompletedProcess[str]:
    """setup.sh in a folder whose .venv answers like a real one: pip does nothing,
    `jupyter kernelspec list --json` lists `kernels`, python runs the real Python."""
    shutil.copy(REPO / "setup.sh", tmp_path / "setup.sh")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")  # the local pins
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    listing = json.dumps({"kernelspecs": {k: {"resource_dir": f"/k/{k}"} for k in kernels}})
    (bin_dir / "python").write_text(
        f'#!/bin/sh\n[ "$1" = "-m" ] && exit 0\nexec {sys.executable} "$@"\n')
    (bin_dir / "jupyter").write_text(f"#!/bin/sh\necho '{listing}'\n")
    for shim in bin_dir.iterdir():
        shim.chmod(0o755)
    return subprocess.run(["bash", "setup.sh"], cwd=tmp_path, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable,
                               "LILY_NO_LOCAL_MODEL": "1", **env},
                          timeout=60, check=False)


@pytest.mark.skipif(shutil.which("bash") is None, reason="setup.sh is a bash script")
def test_setup_ends_with_a_plain_sentence(tmp_path: Path) -> None:
    done = _run_setup(tmp_path, ["python3", "lily"])
    assert done.returncode == 0, done.stderr
    last = done.stdout.splitlines()[-1]
    assert last.startswith(
        "Lily is ready: .venv has Lily, its test tools and the Lily kernel for Jupyter, "), last
    assert last.endswith((", and the embedded local model.", ", without the local model.")), last


@pytest.mark.skipif(shutil.which("bash") is None, reason="setup.sh is a bash script")
def test_setup_fails_clearly_without_the_kernel(tmp_path: Path) -> None:
    done = _run_setup(tmp_path, ["python3"])
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "setup.sh: Lily is installed in .venv but Jupyter there does not list the Lily kernel.")


@pytest.mark.skipif(shutil.which("bash") is None, reason="setup.sh is a bash script")
def test_setup_with_the_local_model_succeeds_and_leaves_no_wheel_folder(tmp_path: Path) -> None:
    """The llama.cpp wheel is built in the background into a folder of its own: setup
    waits for it, installs it, removes the folder and exits 0 (its exit trap once failed
    on the finished build under `set -e`: exit 1 after "Lily is ready")."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = _run_setup(tmp_path, ["python3", "lily"], LILY_NO_LOCAL_MODEL="0",
                      TMPDIR=str(scratch))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith("Lily is ready: "), done.stdout
    assert list(scratch.iterdir()) == []
