"""Execute the golden notebooks with the Lily kernel and store their sanitized outputs.

    .venv/bin/python notebooks/golden/regenerate.py          # all of them
    .venv/bin/python notebooks/golden/regenerate.py errors   # one, by name

Review the diff before committing: the stored outputs are the contract nbval checks.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import nbformat
from golden_harness import HERE, LATE_SKILL_TAG, add_late_skill, remove_late_skill, sanitize
from nbclient import NotebookClient


def golden_env() -> dict[str, str]:
    """This environment without LILY_* variables (they would override lily.yaml)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("LILY_")}


def _sanitize_output(output: Any) -> None:
    if "data" in output:
        for mime, value in output["data"].items():
            if isinstance(value, str):
                output["data"][mime] = sanitize(value)
    if output.get("output_type") == "error":
        output["evalue"] = sanitize(output["evalue"])
        output["traceback"] = [sanitize(line) for line in output["traceback"]]


def regenerate(name: str) -> None:
    path = HERE / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)

    def on_cell_start(cell: Any, cell_index: int) -> None:
        if LATE_SKILL_TAG in cell.metadata.get("tags", []):
            add_late_skill()

    client = NotebookClient(nb, kernel_name="lily", timeout=120, record_timing=False,
                            resources={"metadata": {"path": str(HERE)}},
                            on_cell_start=on_cell_start)
    remove_late_skill()
    try:
        client.execute(env=golden_env())
    finally:
        remove_late_skill()
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            _sanitize_output(output)
    nbformat.write(nb, path)
    print(f"regenerated {path.relative_to(HERE.parent.parent)}")


if __name__ == "__main__":
    names = sys.argv[1:] or sorted(p.stem for p in HERE.glob("*.ipynb"))
    for notebook in names:
        regenerate(notebook)
