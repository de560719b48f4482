"""Which files a run created or changed in the workspace: a cheap look at the workspace
before the run and after it (each regular file's size and modification time, nothing
read), bounded, then the two compared.

The look follows no link, lists no folder that holds no work of the person's (`.git`,
`.lily`, environments, caches, `node_modules`) and stops after `MAX_ENTRIES` entries
(then what it did not see is said: `Snapshot.complete`). Measured on a workspace of
10,000 files in 100 folders: docs/benchmarks.md ("Files a run wrote"). The images among
the files written are read, within bounds and never through a link (`written_images`),
for the cell to show.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lily_kernel.host_files import read_inside

__all__ = ["IMAGE_TYPES", "MAX_ENTRIES", "MAX_IMAGE_BYTES", "Snapshot", "WrittenFile",
           "take_snapshot", "written_files", "written_images"]

MAX_ENTRIES = 20_000  # entries looked at, folders included (a look: docs/benchmarks.md)
# Folders that hold no work of the person's, or too much to look at for each run.
SKIPPED = frozenset({".git", ".lily", ".hg", ".svn", "node_modules", "__pycache__",
                     ".ipynb_checkpoints", ".venv", "venv", ".tox", ".nox", ".mypy_cache",
                     ".pytest_cache", ".ruff_cache", ".cache", ".npm", "site-packages"})
# The images a cell shows of the files a run wrote, by name (display/runs.py checks them
# as it checks any image a run shows): at most this many, each at most this large.
IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
               ".gif": "image/gif", ".webp": "image/webp", ".svg": "image/svg+xml"}
MAX_IMAGES = 4
MAX_IMAGE_BYTES = 4 << 20


@dataclass(frozen=True)
class Snapshot:
    """The workspace's regular files as looked at: relative path (POSIX) to (size,
    modification time in ns); `complete`: False when the look stopped at its bound."""

    files: Mapping[str, tuple[int, int]]
    complete: bool = True


@dataclass(frozen=True)
class WrittenFile:
    """A file a run created (`created`) or changed: its path in the workspace, its size."""

    path: str
    size: int
    created: bool


def _environment(folder: str) -> bool:
    return (os.path.isfile(os.path.join(folder, "pyvenv.cfg"))
            or os.path.isdir(os.path.join(folder, "conda-meta")))


def take_snapshot(workspace: Path, limit: int = MAX_ENTRIES) -> Snapshot:
    """The workspace's regular files, folder by folder from its top (so a bound cuts the
    deepest first); a folder that cannot be listed is left out."""
    files: dict[str, tuple[int, int]] = {}
    queue, seen = [""], 0
    while queue:
        relative = queue.pop(0)
        folder = os.path.join(workspace, relative) if relative else str(workspace)
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    seen += 1
                    if seen > limit:
                        return Snapshot(files, complete=False)
                    name = f"{relative}/{entry.name}" if relative else entry.name
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if entry.name not in SKIPPED and not _environment(entry.path):
                                queue.append(name)
                        elif entry.is_file(follow_symlinks=False):
                            info = entry.stat(follow_symlinks=False)
                            files[name] = (info.st_size, info.st_mtime_ns)
                    except OSError:
                        continue
        except OSError:
            continue
    return Snapshot(files)


def written_files(before: Snapshot, after: Snapshot) -> tuple[WrittenFile, ...]:
    """The files of `after` that `before` did not have, or had with another size or
    modification time, by path."""
    return tuple(WrittenFile(path, state[0], path not in before.files)
                 for path, state in sorted(after.files.items())
                 if before.files.get(path) != state)


def written_images(workspace: Path, written: tuple[WrittenFile, ...]
                   ) -> list[tuple[str, str, bytes]]:
    """The images among `written` (by name), as (path, MIME type, bytes): the first few
    not too large, each read as a regular file of the workspace, never through a link."""
    images: list[tuple[str, str, bytes]] = []
    for file in written:
        kind = IMAGE_TYPES.get(os.path.splitext(file.path)[1].lower())
        if kind is None or not 0 < file.size <= MAX_IMAGE_BYTES:
            continue
        try:
            data = read_inside(workspace, file.path, MAX_IMAGE_BYTES)
        except OSError:
            continue
        images.append((file.path, kind, data))
        if len(images) == MAX_IMAGES:
            break
    return images
