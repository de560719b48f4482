"""Which notebook a kernel serves, the cells its saved file holds, and which recorded
turns are still in it (docs/sessions.md).

The front end says which notebook: `LILY_NOTEBOOK` (runners), `JPY_SESSION_NAME`
(JupyterLab, Notebook 7, JupyterHub: set by jupyter_server when it starts the kernel),
or the `cellId` of each execute request (VS Code: a `vscode-notebook-cell:` URI naming
the file). The live notebook decides what exists (the rule of Beaker's notebooks): a
recorded turn whose cell is no longer in the saved file is left out, and named.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = ["MAX_NOTEBOOK_BYTES", "SavedCell", "TurnCell", "earlier_turns",
           "notebook_from_cell", "notebook_of", "read_saved_cells", "renamed_notebook",
           "saved_cell", "shown_path"]

MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024  # outputs included; a notebook is rarely 10 MiB
VSCODE_CELL = "vscode-notebook-cell"


def notebook_of(environ: Mapping[str, str], workspace: Path) -> Path | None:
    """The notebook the environment names: `LILY_NOTEBOOK`, else `JPY_SESSION_NAME`
    (absolute from jupyter_server 2; a path relative to the workspace otherwise)."""
    for name in ("LILY_NOTEBOOK", "JPY_SESSION_NAME"):
        value = environ.get(name, "").strip()
        if value:
            path = Path(value).expanduser()
            if not path.is_absolute():
                path = workspace / path
                if not path.exists():  # an older server's path from its root
                    path = workspace / path.name
            return path
    return None


def notebook_from_cell(cell_id: str | None) -> Path | None:
    """The notebook a VS Code cell URI names (`vscode-notebook-cell:/dir/nb.ipynb#W0s…`);
    None for any other cell id (JupyterLab sends the cell's own id)."""
    if not cell_id or not cell_id.startswith(f"{VSCODE_CELL}:"):
        return None
    path = unquote(urlsplit(cell_id).path)
    if len(path) > 3 and path[0] == "/" and path[2] == ":":  # /c:/Users/… on Windows
        path = path[1:]
    return Path(path) if path.endswith(".ipynb") else None


# How many notebooks beside a renamed one are looked into for its cells, at most.
MAX_NEIGHBOURS = 200


def renamed_notebook(old: Path, cell_ids: Collection[str]) -> Path | None:
    """Where the notebook `old` went when it is gone: the newest notebook in its folder
    whose saved cells hold one of `cell_ids` (cell ids are random: a renamed notebook
    keeps them). JupyterLab renames `Untitled.ipynb` on its first save without telling
    the kernel, whose JPY_SESSION_NAME keeps the old name. None when `old` is there, or
    no notebook holds them."""
    if os.path.lexists(old) or not cell_ids:
        return None
    try:
        found = sorted(old.parent.glob("*.ipynb"), key=lambda p: p.stat().st_mtime,
                       reverse=True)[:MAX_NEIGHBOURS]
    except OSError:
        return None
    for path in found:
        cells = read_saved_cells(path)
        if not isinstance(cells, str) and any(c.id in cell_ids for c in cells):
            return path
    return None


def shown_path(notebook: Path, workspace: Path) -> str:
    """How the record names a notebook: relative to the workspace when inside it (so a
    moved or cloned folder keeps its record), else in full."""
    try:
        return notebook.relative_to(workspace).as_posix()
    except ValueError:
        return str(notebook)


@dataclass(frozen=True)
class SavedCell:
    """A saved code cell: its id, its code, and the text its saved outputs show."""

    id: str | None
    source: str
    shown: str = ""


def read_saved_cells(path: Path) -> list[SavedCell] | str:
    """The code cells of the saved notebook, in order; or why they cannot be read. The
    file is bounded and checked first (a FIFO named like a notebook would block), and
    never read through a link (sandboxed code may swap the notebook for one to a file
    of the person's: its contents must not become the saved cells)."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return f"{path} is not a file"
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
                     | getattr(os, "O_NOFOLLOW", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return f"{path} is not a file"
            with os.fdopen(os.dup(fd), "rb") as handle:
                raw = handle.read(MAX_NOTEBOOK_BYTES + 1)
        finally:
            os.close(fd)
    except OSError as exc:
        return f"{path} cannot be read ({exc.strerror or exc})"
    if len(raw) > MAX_NOTEBOOK_BYTES:
        return f"{path} is over {MAX_NOTEBOOK_BYTES // (1024 * 1024)} MiB"
    try:
        cells = json.loads(raw.decode("utf-8")).get("cells")
    except (ValueError, AttributeError, RecursionError):
        return f"{path} is not a notebook (not JSON)"
    if not isinstance(cells, list):
        return f"{path} is not a notebook (no cells)"
    return [SavedCell(c.get("id") if isinstance(c.get("id"), str) else None,
                      _source(c.get("source")), _shown(c.get("outputs")))
            for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"]


def saved_cell(path: Path, cell_id: str | None, code: str) -> SavedCell | None:
    """The saved cell running now: by its id, else the first with its code."""
    cells = read_saved_cells(path)
    if isinstance(cells, str):
        return None
    by_id = next((c for c in cells if cell_id and c.id == cell_id), None)
    return by_id or next((c for c in cells if code.strip() and
                          c.source.strip() == code.strip()), None)


def _source(value: Any) -> str:
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def _shown(outputs: Any) -> str:
    """The plain text of a cell's saved outputs (what a console would show)."""
    if not isinstance(outputs, list):
        return ""
    return "\n".join(_source(o.get("data", {}).get("text/plain"))
                     for o in outputs if isinstance(o, dict) and isinstance(o.get("data"), dict))


@dataclass(frozen=True)
class TurnCell:
    """A recorded turn's cell: the cell id the front end sent, and the code."""

    cell_id: str | None
    code: str


def earlier_turns(turns: Sequence[TurnCell], cells: Sequence[SavedCell],
                  cell_id: str | None, code: str) -> tuple[list[int], list[int]]:
    """Which recorded turns (by index) are still in the saved notebook and above the
    cell running now, and which are no longer in it (their cell deleted, or edited and
    saved). A turn's cell is found by its id (the same id with the same code), else by
    its code, in order; the running cell by its id, else by its code (none found: a
    cell not saved yet, below them all)."""
    ids = {c.id: i for i, c in enumerate(cells) if c.id}
    where: dict[int, int] = {}
    left: list[int] = []
    cursor = 0
    for n, turn in enumerate(turns):
        found = ids.get(turn.cell_id) if turn.cell_id else None
        if found is not None and cells[found].source.strip() != turn.code.strip():
            found = None  # that cell now says something else
        if found is None:
            found = next((i for i in range(cursor, len(cells))
                          if cells[i].source.strip() == turn.code.strip()), None)
        if found is None:
            left.append(n)
            continue
        where[n], cursor = found, found + 1
    current = ids.get(cell_id) if cell_id else None
    if current is None:
        taken = set(where.values())
        same = [i for i, c in enumerate(cells)
                if code.strip() and c.source.strip() == code.strip()]
        current = next((i for i in same if i not in taken), same[0] if same else len(cells))
    return [n for n in sorted(where) if where[n] < current], left
