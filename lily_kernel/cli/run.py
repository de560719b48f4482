"""`lily run NOTEBOOK`: execute a notebook with the Lily kernel and print its transcript.

Cells run top to bottom as in "Run All"; a cell tagged `raises-exception` may fail
(nbclient honours the tag), any other failure stops the run with exit status 1.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TextIO

__all__ = ["run_notebook"]


def _output_text(output: Any) -> str:
    if output.output_type == "error":
        return f"{output.ename}: {output.evalue}"
    if output.output_type == "stream":
        return str(output.text).rstrip("\n")
    data = output.get("data", {})
    return str(data.get("text/plain") or data.get("text/markdown") or "").rstrip("\n")


def run_notebook(path: Path, output: Path | None = None, out: TextIO = sys.stdout) -> int:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name="lily", timeout=300, record_timing=False,
                            resources={"metadata": {"path": str(path.resolve().parent)}})
    status = 0
    try:
        client.execute()
    except CellExecutionError as exc:
        status = 1
        print(f"lily: {path} stopped at a failing cell: {exc.ename}: {exc.evalue}",
              file=sys.stderr)
    for cell in nb.cells:
        if cell.cell_type != "code" or cell.execution_count is None:
            continue
        print(f"In [{cell.execution_count}]: {cell.source}", file=out)
        for item in cell.outputs:
            text = _output_text(item)
            if text:
                print("    " + text.replace("\n", "\n    "), file=out)
        print(file=out)
    if output is not None:
        nbformat.write(nb, output)
    return status
