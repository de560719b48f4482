"""The scratch copy a replay runs in, and its paths written back as the recorded ones.

Replay runs a log's cells again, and a cell may write (the `write` tool): so it runs in
a copy of the recorded workspace in a temporary folder, removed afterwards, and the
person's folder is only ever read. The copy is bounded: what Lily never needs to replay
a session is left out (`.git`, `.lily/sessions`, virtual environments), and a workspace
holding more than MAX_ENTRIES entries or MAX_BYTES of files is refused. Links are kept
as links (one into the workspace leads into the copy; the file tools refuse one that
leads out, there as in the recording); FIFOs are made anew, empty; sockets and devices
are left out. Paths in the replay's events name the copy: `to_recorded` writes them as
the recorded workspace's, so an unchanged workspace replays as identical.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from lily_kernel.errors import ReplayError
from lily_kernel.replay.log import printable

__all__ = ["MAX_BYTES", "MAX_ENTRIES", "PathMap", "scratch_copy"]

MAX_ENTRIES = 20_000  # files, folders and links
MAX_BYTES = 1024 * 1024 * 1024  # 1 GiB of file content
SKIPPED_NAMES = frozenset({".git"})
SKIPPED_PATHS = ((".lily", "sessions"),)  # at any depth (a nested workspace's too)
VENV_MARKERS = ("pyvenv.cfg", "conda-meta")  # a folder holding one is an environment
_CHUNK = 1024 * 1024
Value = TypeVar("Value")


@dataclass(frozen=True)
class _Entry:
    relative: str
    kind: str  # dir, file, link, fifo
    size: int = 0


@contextlib.contextmanager
def scratch_copy(workspace: Path) -> Iterator[Path]:
    """A copy of `workspace` in a new temporary folder (raises ReplayError when the
    workspace is too large), removed when the block ends. Its last part is the
    workspace's own name (a tool result may show it)."""
    plan = _plan(workspace)
    with tempfile.TemporaryDirectory(prefix="lily-replay-") as folder:
        scratch = Path(folder).resolve() / (workspace.name or "workspace")
        scratch.mkdir()
        for entry in plan:
            _copy(workspace, scratch, entry)
        yield scratch


def _plan(workspace: Path) -> list[_Entry]:
    """What to copy, checked against the bounds before anything is copied."""
    plan: list[_Entry] = []
    total = 0
    pending = [""]
    while pending:
        relative = pending.pop()
        try:
            with os.scandir(workspace / relative if relative else workspace) as found:
                entries = sorted(found, key=lambda e: e.name)
        except OSError:
            continue  # a folder that cannot be read is left out, as an unreadable file
        for item in entries:
            path = f"{relative}/{item.name}" if relative else item.name
            entry = _entry(item, path)
            if entry is None:
                continue
            plan.append(entry)
            total += entry.size
            if len(plan) > MAX_ENTRIES:
                raise ReplayError(
                    f"the workspace {printable(str(workspace))} holds more than "
                    f"{MAX_ENTRIES:,} files and folders ({_LEFT_OUT} left out): too many to "
                    "copy for a replay.")
            if total > MAX_BYTES:
                raise ReplayError(
                    f"the workspace {printable(str(workspace))} holds more than "
                    f"{_size(MAX_BYTES)} of files ({_LEFT_OUT} left out): too much to copy "
                    "for a replay.")
            if entry.kind == "dir":
                pending.append(path)
    return plan


_LEFT_OUT = ".git, .lily/sessions and virtual environments"


def _size(size: int) -> str:
    gib = 1024 * 1024 * 1024
    return f"{size // gib} GiB" if size % gib == 0 else f"{size:,} bytes"


def _entry(item: os.DirEntry[str], relative: str) -> _Entry | None:
    """How one entry is copied; None: left out."""
    try:
        if item.is_symlink():
            return _Entry(relative, "link")
        mode = item.stat(follow_symlinks=False).st_mode
    except OSError:
        return None
    if stat.S_ISDIR(mode):
        parts = tuple(relative.split("/"))
        if (item.name in SKIPPED_NAMES or any(parts[-len(p):] == p for p in SKIPPED_PATHS)
                or any(os.path.lexists(os.path.join(item.path, m)) for m in VENV_MARKERS)):
            return None
        return _Entry(relative, "dir")
    if stat.S_ISREG(mode):
        try:
            return _Entry(relative, "file", item.stat(follow_symlinks=False).st_size)
        except OSError:
            return None
    return _Entry(relative, "fifo") if stat.S_ISFIFO(mode) else None


def _copy(workspace: Path, scratch: Path, entry: _Entry) -> None:
    source, target = workspace / entry.relative, scratch / entry.relative
    try:
        if entry.kind == "dir":
            target.mkdir()
        elif entry.kind == "fifo":
            os.mkfifo(target)
        elif entry.kind == "link":
            os.symlink(_link_target(workspace, scratch, source), target)
        else:
            _copy_file(source, target, entry.size)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):  # a copy with holes would mislead
            raise ReplayError(f"no room for a scratch copy of the workspace in "
                              f"{tempfile.gettempdir()} ({exc.strerror}); set TMPDIR to a "
                              "folder with room.") from None
        # Changed or unreadable since it was listed: left out, as unreadable ones are.


def _link_target(workspace: Path, scratch: Path, link: Path) -> str:
    """Where the copy's link leads: into the copy when the original leads into the
    workspace, else where the original leads (written out in full)."""
    written = os.readlink(link)
    target = os.path.normpath(os.path.join(os.path.dirname(link), written))
    inside = os.path.relpath(target, workspace)
    if inside != ".." and not inside.startswith(f"..{os.sep}"):
        return written if not os.path.isabs(written) else str(scratch / inside)
    return target


def _copy_file(source: Path, target: Path, size: int) -> None:
    """At most `size` bytes (what was counted), never waiting on what is no file."""
    fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return
        with open(target, "wb") as out:
            left = size
            while left > 0:
                chunk = os.read(fd, min(_CHUNK, left))
                if not chunk:
                    break
                out.write(chunk)
                left -= len(chunk)
    finally:
        os.close(fd)
    shutil.copystat(source, target)


@dataclass(frozen=True)
class PathMap:
    """The copy's path, and the recorded workspace's path that it stands for."""

    scratch: str
    recorded: str

    def to_recorded(self, value: Value) -> Value:
        """`value` with every mention of the copy written as the recorded workspace:
        strings, keys, lists, tuples and (frozen) dataclasses of them."""
        return self._mapped(value)  # type: ignore[no-any-return]

    def to_scratch(self, text: str) -> str:
        """`text` recorded in the workspace, as the copy's own run would have said it
        (a recorded script's output fed back: the turn then sees the copy's paths, as
        it sees every other path of the replay)."""
        return text.replace(self.recorded, self.scratch)

    def _mapped(self, value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(self.scratch, self.recorded)
        if isinstance(value, dict):
            return {self._mapped(k): self._mapped(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self._mapped(v) for v in value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return dataclasses.replace(value, **{
                f.name: self._mapped(getattr(value, f.name))
                for f in dataclasses.fields(value) if f.init})
        return value
