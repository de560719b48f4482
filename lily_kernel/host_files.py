"""Files that sandboxed code could touch, read and written by Lily on the host.

The workspace is writable from the sandbox, and a session's Python kernel lives as long
as the session: a thread it left running can swap a file, or a folder on the way to it,
for a link to the person's home, or for a FIFO, between Lily's check and Lily's open.
Opened as this module opens them, that swap fails instead of reaching the host: every
folder is opened from the one before (never by a path walked again), none through a
link (O_NOFOLLOW), the file without waiting (O_NONBLOCK: a FIFO with no writer or no
reader answers at once), and only a regular file is used. Errors are OSError.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path, PurePosixPath

__all__ = ["open_folder", "open_inside", "read_inside", "scan_inside", "write_inside"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW


def _parts(rel: str | PurePosixPath) -> list[str]:
    parts = [p for p in PurePosixPath(rel).parts if p != "."]
    if any(p in ("..", "/") for p in parts):
        raise OSError(errno.EINVAL, "not a path inside its folder")
    return parts


def open_folder(root: Path, rel: str | PurePosixPath, make: bool = False) -> int:
    """The folder `rel` of `root` open (a descriptor the caller closes), as files are
    opened here: no link on the way; with `make`, missing folders made."""
    return _folder(root, _parts(rel), make)


def _folder(root: Path, parts: list[str], make: bool = False) -> int:
    """The folder `root/parts…` open, each part opened from the one before, none a
    link; with `make`, missing ones are made (0o777 less the umask)."""
    at = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for part in parts:
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=at)
            inner = os.open(part, _FOLDER, dir_fd=at)
            os.close(at)
            at = inner
    except BaseException:
        os.close(at)
        raise
    return at


def open_inside(root: Path, rel: str | PurePosixPath, flags: int = os.O_RDONLY,
                make_folders: bool = False) -> int:
    """The regular file `rel` of `root`, opened with `flags` (O_NOFOLLOW and O_NONBLOCK
    added); a descriptor the caller closes."""
    parts = _parts(rel)
    if not parts:
        raise OSError(errno.EISDIR, "a folder, not a file")
    at = _folder(root, parts[:-1], make_folders)
    try:
        fd = os.open(parts[-1], flags | _NOFOLLOW | _NONBLOCK, 0o666, dir_fd=at)
    finally:
        os.close(at)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file")
    if flags & _NONBLOCK == 0:
        os.set_blocking(fd, True)
    return fd


def read_inside(root: Path, rel: str | PurePosixPath, limit: int) -> bytes:
    """At most `limit` bytes of the file `rel` of `root` (its first ones)."""
    fd = open_inside(root, rel)
    try:
        chunks, total = [], 0
        while total < limit and (chunk := os.read(fd, min(1 << 20, limit - total))):
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_inside(root: Path, rel: str | PurePosixPath, data: bytes) -> None:
    """`data` as the whole of the file `rel` of `root`, made with its folders if
    missing; never through a link, never into anything but a regular file."""
    fd = open_inside(root, rel, os.O_WRONLY | os.O_CREAT, make_folders=True)
    try:
        os.ftruncate(fd, 0)  # only now: the file is known to be a regular file of root
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def scan_inside(root: Path, rel: str | PurePosixPath) -> list[tuple[str, str, int]]:
    """The entries of the folder `rel` of `root`: (name, kind, size), the kind one of
    "folder", "file", "link" (not followed) or "other" (a FIFO, a socket)."""
    fd = _folder(root, _parts(rel))
    try:
        found = []
        with os.scandir(fd) as entries:
            for entry in entries:
                mode = entry.stat(follow_symlinks=False).st_mode
                kind = ("folder" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode)
                        else "link" if stat.S_ISLNK(mode) else "other")
                found.append((entry.name, kind, entry.stat(follow_symlinks=False).st_size))
        return found
    finally:
        os.close(fd)
