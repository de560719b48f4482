"""Digests of skill and persona folders, what trust records: every file's path and bytes.

A folder's digest reads every file of it, in path order (links by their target, not
followed; past MAX_FILES or MAX_BYTES, names and stat only). Reading a 1,000-skill
workspace at every session start costs more than loading it, so each file's sha256 is
kept in `DigestCache` by what changes when the file changes, as git's index does: its
path, size, modification and change times (nanoseconds) and inode. Writing a file
changes its change time, which no one can set back; a file changed within
RACY_SECONDS of being digested is not kept (its times may not show a second change
in the same tick). The SKILL.md the loader read is digested from those very bytes
(`read`), never from the disk a second time: what was trusted is what the model reads.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import time
from collections.abc import Mapping
from pathlib import Path

__all__ = ["DIGEST_CACHE_FILE", "DigestCache", "file_digest", "folder_digest"]

DIGEST_CACHE_FILE = "file-digests.sqlite"
MAX_FILES = 5_000
MAX_BYTES = 256 * 1024 * 1024
RACY_SECONDS = 2.0
MAX_KEPT = 200_000  # files whose digests the cache keeps (the oldest go first)

Key = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode


def file_digest(path: Path | str) -> str | None:
    """The sha256 of a regular file's bytes; None when there is none at `path`;
    "not-a-file" for a FIFO, a folder or a device (never opened for reading: a FIFO
    would block)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "not-a-file"
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


def _key(info: os.stat_result) -> Key:
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


class DigestCache:
    """Files' sha256 by their stat, kept in one SQLite file (`path` None: this process
    only). A cache that cannot be read or written only costs time."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._known: dict[str, tuple[Key, str]] | None = None
        self._new: dict[str, tuple[Key, str]] = {}
        self.read = 0  # files this cache had to read (for tests and benchmarks)

    def _load(self) -> dict[str, tuple[Key, str]]:
        if self._known is None:
            self._known = {}
            if self.path is not None and self.path.is_file():
                with contextlib.suppress(Exception), self._connect() as db:
                    self._known = {row[0]: ((row[1], row[2], row[3], row[4]), row[5])
                                   for row in db.execute("SELECT * FROM files")}
        return self._known

    def _connect(self) -> contextlib.closing:  # type: ignore[type-arg]
        import sqlite3  # with the first digest, not at kernel start

        assert self.path is not None
        db = sqlite3.connect(self.path, timeout=2)
        db.execute("CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER, "
                   "mtime INTEGER, ctime INTEGER, inode INTEGER, digest TEXT)")
        return contextlib.closing(db)

    def digest(self, path: str, info: os.stat_result) -> str:
        """The file's sha256: the kept one while its stat is unchanged, else read."""
        key = _key(info)
        kept = self._load().get(path)
        if kept is not None and kept[0] == key:
            return kept[1]
        self.read += 1
        digest = file_digest(path) or "unreadable"
        newest = max(info.st_mtime_ns, info.st_ctime_ns) / 1e9
        if digest not in ("unreadable", "not-a-file") and time.time() - newest > RACY_SECONDS:
            self._known[path] = self._new[path] = (key, digest)  # type: ignore[index]
        return digest

    def save(self) -> None:
        """Keep what was read since the last save (best effort)."""
        if self.path is None or not self._new:
            return
        new, self._new = self._new, {}
        with contextlib.suppress(Exception):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db, db:
                db.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)",
                               [(p, *key, d) for p, (key, d) in new.items()])
                db.execute("DELETE FROM files WHERE rowid IN (SELECT rowid FROM files "
                           "ORDER BY rowid DESC LIMIT -1 OFFSET ?)", (MAX_KEPT,))


def _files(folder: str, rel: str = "") -> list[tuple[str, os.DirEntry[str]]]:
    """Every entry of the folder that is not a folder (links to folders included, not
    followed), by its path in the folder, in path order. One scandir a folder: os.walk
    costs more than the digests it serves."""
    found: list[tuple[str, os.DirEntry[str]]] = []
    folders: list[os.DirEntry[str]] = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return found
    for entry in entries:
        try:
            deeper = entry.is_dir(follow_symlinks=False)
        except OSError:
            deeper = False
        if deeper:
            folders.append(entry)
        else:
            found.append((rel + entry.name, entry))
    # A folder's own files first, then its folders' (the order os.walk gave the digests
    # already in people's trust stores).
    for entry in folders:
        found += _files(entry.path, rel + entry.name + os.sep)
    return found


def folder_digest(folder: str, cache: DigestCache | None = None,
                  read: Mapping[str, str] | None = None) -> str:
    """One digest of a folder: every file's path and bytes (links by their target), in
    path order; past MAX_FILES or MAX_BYTES, names and stat (size, modification and
    change times, inode) only. `read`: digests of files already read, by their path in
    the folder (the loader's SKILL.md)."""
    cache = cache or DigestCache(None)
    read = read or {}
    digest = hashlib.sha256()
    size = 0
    for files, (rel, entry) in enumerate(_files(folder), 1):
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            digest.update(f"{rel}\0gone\n".encode("utf-8", "surrogateescape"))
            continue
        if rel in read:  # what was read, link or not
            line = f"{rel}\0{read[rel]}\n"
        elif stat.S_ISLNK(info.st_mode):
            try:
                line = f"{rel}\0link\0{os.readlink(entry.path)}\n"
            except OSError:
                line = f"{rel}\0gone\n"
        elif files > MAX_FILES or size + info.st_size > MAX_BYTES:
            # Not read: known by what changes when it changes (a write moves the change
            # time), never by its size alone: 5,000 empty files before scripts/ would let
            # a script be changed to another of the same length, still trusted.
            line = f"{rel}\0stat\0{'/'.join(map(str, _key(info)))}\n"
        else:
            size += info.st_size
            content = cache.digest(entry.path, info) if stat.S_ISREG(info.st_mode) \
                else "not-a-file"
            line = f"{rel}\0{content}\n"
        digest.update(line.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()
