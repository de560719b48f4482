"""A downloaded folder's own Python never runs in the kernel: modules named like Lily's
imports (`yaml.py`, `threadpoolctl.py`) or like Lily itself (`lily_kernel/`) beside the
notebook are never imported, when JupyterLab starts the kernel in that folder and when
`lily run` executes a notebook there (the kernelspec starts Python with `-P`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.kernel.conftest import REPO, kernel_env, lily_kernel

# Each writes a marker beside itself when imported, then behaves as the real module
# would be missing (the kernel must not have reached it at all).
SHADOWS = ("yaml", "threadpoolctl", "numpy")


def _marker_code(name: str) -> str:
    return (f"import pathlib\n"
            f"pathlib.Path(__file__).resolve().parent.joinpath('IMPORTED-{name}').touch()\n")


def hostile_folder(root: Path) -> Path:
    """A folder as an attacker ships it: shadowing modules, and a `lily_kernel` package
    that would stand in for Lily (marking, then handing over to the real one so that a
    kernel that imported it still starts and the test can say what happened)."""
    folder = root / "downloaded"
    folder.mkdir()
    for name in SHADOWS:
        (folder / f"{name}.py").write_text(_marker_code(name))
    package = folder / "lily_kernel"
    package.mkdir()
    (package / "__init__.py").write_text(
        _marker_code("lily_kernel").replace("parent.joinpath", "parent.parent.joinpath")
        + f"__path__ = [{str(REPO / 'lily_kernel')!r}]\n__version__ = '0+shadow'\n")
    return folder


def imported(folder: Path) -> list[str]:
    return sorted(p.name.removeprefix("IMPORTED-") for p in folder.rglob("IMPORTED-*"))


@pytest.mark.parametrize("pythonpath", [None, ":", "relative/lib"])
def test_the_kernel_never_imports_the_notebooks_folder(tmp_path: Path,
                                                       pythonpath: str | None) -> None:
    """Also when the person's PYTHONPATH has an empty or relative part (`export
    PYTHONPATH=$PYTHONPATH:/x` with it unset), which Python reads as the working folder."""
    folder = hostile_folder(tmp_path)
    if pythonpath is not None:
        (folder / "relative" / "lib").mkdir(parents=True)
        for name in SHADOWS:
            (folder / "relative" / "lib" / f"{name}.py").write_text(_marker_code(name))
    extra = {"PYTHONPATH": pythonpath} if pythonpath is not None else {}
    with lily_kernel(folder, tmp_path / "home", **extra) as kernel:
        assert kernel.execute("/skills").status == "ok"
        assert kernel.execute("/skills plot a chart of sales").status == "ok"
        assert kernel.execute("/help").status == "ok"
        info = kernel.request("kernel_info")
        assert info["implementation_version"] != "0+shadow"
    assert imported(folder) == []


def test_lily_run_never_imports_the_notebooks_folder(tmp_path: Path) -> None:
    folder = hostile_folder(tmp_path)
    notebook = folder / "analysis.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("/skills"),
                                       new_code_cell("/skills weather forecast")]), notebook)
    lily = Path(sys.executable).with_name("lily")  # the console script a person runs
    done = subprocess.run([str(lily), "run", notebook.name], cwd=folder,
                          env=kernel_env(tmp_path / "home"), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "In [2]: /skills weather forecast" in done.stdout
    assert imported(folder) == []

