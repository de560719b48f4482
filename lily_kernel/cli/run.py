"""`lily run NOTEBOOK`: execute a notebook with the Lily kernel and print its transcript.

Cells run top to bottom as in "Run All"; a cell tagged `raises-exception` may fail
(nbclient honours the tag), any other failure stops the run with exit status 1.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TextIO

from lily_kernel.errors import UsageError
from lily_kernel.visible import visible

__all__ = ["run_notebook"]


def _error_text(output: Any) -> str:
    """An error output as the kernel summed it up: its traceback's last entry (Lily's
    own errors are that one entry, `Error: …`, however many lines; a bug's last entry
    is `Name: message`)."""
    traceback = list(output.get("traceback") or ())
    return str(traceback[-1]) if traceback else f"{output.ename}: {output.evalue}"


def _output_text(output: Any) -> str:
    if output.output_type == "error":
        return _error_text(output)
    if output.output_type == "stream":
        return str(output.text).rstrip("\n")
    data = output.get("data", {})
    return str(data.get("text/plain") or data.get("text/markdown") or "").rstrip("\n")


def _read_notebook(path: Path) -> Any:
    """The notebook at `path`, or a UsageError saying why there is none."""
    import nbformat

    if not path.exists():
        raise UsageError(f"{path}: no such file.")
    if not path.is_file():
        raise UsageError(f"{path}: not a file.")
    try:
        return nbformat.read(path, as_version=4)
    except Exception as exc:  # noqa: BLE001 - nbformat raises many kinds for a non-notebook
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise UsageError(f"{path}: not a Jupyter notebook ({reason}).") from None


def _check_output(output: Path) -> None:
    """Before any cell runs: the executed notebook must have somewhere to go."""
    if output.is_dir():
        raise UsageError(f"--output {output}: is a folder; give a file name.")
    if not output.parent.is_dir():
        raise UsageError(f"--output {output}: the folder {output.parent} does not exist.")


def run_notebook(path: Path, output: Path | None = None, out: TextIO = sys.stdout) -> int:
    """Run every cell; 0 when all ran (tagged failures allowed), 1 when one stopped the
    run. Bad arguments raise UsageError before anything runs."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = _read_notebook(path)
    if output is not None:
        _check_output(output)
    client = NotebookClient(nb, kernel_name="lily", timeout=300, record_timing=False,
                            resources={"metadata": {"path": str(path.resolve().parent)}})
    status = 0
    try:
        client.execute()
    except CellExecutionError as exc:
        status = 1
        failed = [o for cell in nb.cells if cell.cell_type == "code"
                  for o in cell.outputs if o.output_type == "error"]
        summary = _error_text(failed[-1]) if failed else f"{exc.ename}: {exc.evalue}"
        print(f"lily: {visible(str(path))} stopped at a failing cell: "
              f"{visible(summary, lines=True)}", file=sys.stderr)
    for cell in nb.cells:
        if cell.cell_type != "code" or cell.execution_count is None:
            continue
        # The notebook's cells and what the model said are shown, never obeyed: an
        # escape code in them does not reach the terminal raw.
        print(f"In [{cell.execution_count}]: {visible(cell.source, lines=True)}", file=out)
        for item in cell.outputs:
            text = visible(_output_text(item), lines=True)
            if text:
                print("    " + text.replace("\n", "\n    "), file=out)
        print(file=out)
    if output is not None:
        nbformat.write(nb, output)
    return status
