"""Execute the golden notebooks with the Lily kernel and store their sanitized outputs.

    .venv/bin/python notebooks/golden/regenerate.py          # all of them
    .venv/bin/python notebooks/golden/regenerate.py errors   # one, by name
    .venv/bin/python notebooks/golden/regenerate.py chat/chat

Review the diff before committing: the stored outputs are the contract nbval checks.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import nbformat
from golden_harness import (
    HERE,
    LATE_SKILL_TAG,
    SCRIPTED_REPLIES,
    add_late_skill,
    remove_late_skill,
    remove_sandbox_placeholders,
    sanitize,
    script_cell,
    start_model_server,
)
from nbclient import NotebookClient

HIDE_LOCAL_MODEL = HERE.parents[1] / "tests" / "support" / "hide_local_model"


def golden_env() -> dict[str, str]:
    """This environment without LILY_* variables (they would override lily.yaml), except
    the scripted model server's address, which the harness sets; and as without the
    `local` extra, so a chat cell with no model configured shows the same error anywhere."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LILY_") or k == "LILY_API_BASE"}
    env["PYTHONPATH"] = os.pathsep.join((str(HIDE_LOCAL_MODEL), str(HERE.parents[1])))
    env["LILY_TRUST"] = "workspace"  # as the test suite runs them (no one to ask)
    return env


def _sanitize_output(output: Any) -> None:
    if "data" in output:
        for mime, value in output["data"].items():
            if isinstance(value, str):
                output["data"][mime] = sanitize(value)
    if output.get("output_type") == "error":
        output["evalue"] = sanitize(output["evalue"])
        output["traceback"] = [sanitize(line) for line in output["traceback"]]


def regenerate(name: str, server: Any) -> None:
    path = HERE / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)

    def on_cell_start(cell: Any, cell_index: int) -> None:
        if LATE_SKILL_TAG in cell.metadata.get("tags", []):
            add_late_skill()
        if SCRIPTED_REPLIES in cell.metadata:
            script_cell(server, cell)

    client = NotebookClient(nb, kernel_name="lily", timeout=120, record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}},
                            on_cell_start=on_cell_start)
    remove_late_skill()
    try:
        client.execute(env=golden_env())
    finally:
        remove_late_skill()
        remove_sandbox_placeholders()
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            _sanitize_output(output)
    nbformat.write(nb, path)
    print(f"regenerated {path.relative_to(HERE.parent.parent)}")


if __name__ == "__main__":
    names = sys.argv[1:] or sorted(str(p.relative_to(HERE).with_suffix(""))
                                   for p in HERE.rglob("*.ipynb")
                                   if ".ipynb_checkpoints" not in p.parts)
    model_server = start_model_server()
    try:
        for notebook in names:
            regenerate(notebook, model_server)
    finally:
        model_server.__exit__(None, None, None)
