"""Read a SKILL.md as the loader does: bounded, never blocking on a FIFO, never through a
link leading out of its skill folder (checked on the file actually opened)."""

from __future__ import annotations

import errno
import os
import stat

from lily_kernel.skills.frontmatter import MAX_SKILL_BYTES

__all__ = ["OutsideFolder", "read_skill_file"]

class OutsideFolder(OSError):  # noqa: N818 (an OSError, as the loader reports them)
    """A SKILL.md that is a link to a file outside its skill folder."""


def _opened_path(fd: int, path: str) -> str:
    """The real path of the file open at `fd`: what was read, not what a name now says
    (Linux: /proc/self/fd; elsewhere the name's real path)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(path)


def _check_inside(fd: int, path: str) -> None:
    """Refuse a SKILL.md (a link) whose real file is not in its skill folder: a link to
    ~/.ssh/id_rsa would be read, sent to the model and logged. Checked on the open file,
    so a link swapped in meanwhile is caught too."""
    real = _opened_path(fd, path)
    folder = os.path.realpath(os.path.dirname(path))
    if not real.startswith(folder + os.sep):
        raise OutsideFolder(errno.EXDEV, f"it is a link to a file outside its skill "
                            f"folder ({real}); Lily reads only what the folder holds")


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _open(path: str) -> int:
    """The SKILL.md, open for reading. Not a link (nearly always): opened as it is, one
    system call; a link: followed, then its real file checked."""
    # O_NONBLOCK: a FIFO named SKILL.md must not hang the loader; fstat rejects it.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    try:
        return os.open(path, flags | _NOFOLLOW)
    except OSError as exc:
        if exc.errno != errno.ELOOP or not _NOFOLLOW:
            raise
    fd = os.open(path, flags)
    try:
        _check_inside(fd, path)
    except OSError:
        os.close(fd)
        raise
    return fd


def read_skill_file(path: str) -> tuple[bytes, int]:
    """The file's bytes (at most one past the size limit) and its size on disk."""
    fd = _open(path)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        size = min(info.st_size, MAX_SKILL_BYTES) + 1
        # Raw os.read: a buffered file object costs twice as much per small file.
        data = os.read(fd, size)
        # A short read is the end of the file. A full one means it grew since fstat:
        # read on, up to one byte past the limit (enough for the parser to report it).
        while len(data) == size <= MAX_SKILL_BYTES:
            size = min(2 * size, MAX_SKILL_BYTES + 1)
            more = os.read(fd, size - len(data))
            if not more:
                break
            data += more
        return data, max(info.st_size, len(data))
    finally:
        os.close(fd)
