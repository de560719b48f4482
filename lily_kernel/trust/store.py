"""The trust store: which workspaces the person trusts, and exactly what they trusted.

One JSON file under the Lily home (`<home>/trust.json`), outside every workspace, so a
downloaded folder cannot trust itself. Per workspace (its resolved path): the digest of
its `lily.yaml` when trusted, and each trusted workspace skill's digest (its SKILL.md
and every file of its folder) by the folder's path inside the workspace. A skill added
or changed since is not in it at that digest: it is held again, the rest stay trusted.

A store that cannot be read or parsed raises `TrustStoreError` and is never written
over: the person's other trusted workspaces are not lost to one bad edit.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lily_kernel.errors import TrustStoreError

__all__ = ["TRUST_FILE", "TrustStore", "WorkspaceTrust", "file_digest", "folder_digest"]

TRUST_FILE = "trust.json"
VERSION = 1
# A skill folder's digest reads at most this many files and bytes; past them it stands
# for what was read and how much more there is (names and sizes), never silently less.
MAX_FILES = 5_000
MAX_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class WorkspaceTrust:
    """What the person trusted in one workspace."""

    config: str | None = None  # the trusted lily.yaml's digest (None: not trusted)
    skills: dict[str, str] = field(default_factory=dict)  # folder (relative) -> digest

    def as_json(self) -> dict[str, Any]:
        return {"lily_yaml": self.config, "skills": dict(sorted(self.skills.items())),
                "trusted_at": datetime.now(UTC).isoformat(timespec="seconds")}


def _entry(raw: Any, where: str) -> WorkspaceTrust:
    if not isinstance(raw, dict):
        raise TrustStoreError(f"{where}: not an object")
    config, skills = raw.get("lily_yaml"), raw.get("skills", {})
    if config is not None and not isinstance(config, str):
        raise TrustStoreError(f"{where}: 'lily_yaml' is not a digest")
    if not isinstance(skills, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in skills.items()):
        raise TrustStoreError(f"{where}: 'skills' is not a mapping of folders to digests")
    return WorkspaceTrust(config, dict(skills))


class TrustStore:
    """The store at `path`; `path` None keeps it in memory (replay never writes)."""

    def __init__(self, path: Path | None, entries: dict[str, WorkspaceTrust] | None = None
                 ) -> None:
        self.path = path
        self._memory = dict(entries or {})

    def _read(self) -> dict[str, Any]:
        if self.path is None:
            return {"version": VERSION,
                    "workspaces": {k: v.as_json() for k, v in self._memory.items()}}
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {"version": VERSION, "workspaces": {}}
        except (OSError, UnicodeDecodeError) as exc:
            raise TrustStoreError(f"cannot read the trust store {self.path}: {exc}") from exc
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise TrustStoreError(
                f"the trust store {self.path} is not valid JSON ({exc}); fix or remove it "
                "(workspace skills and settings stay held until then)") from exc
        if not isinstance(data, dict) or not isinstance(data.get("workspaces"), dict):
            raise TrustStoreError(
                f"the trust store {self.path} is not a Lily trust store (no 'workspaces' "
                "mapping); fix or remove it (workspace skills and settings stay held)")
        return data

    def entry(self, workspace: Path) -> WorkspaceTrust | None:
        """What is trusted in `workspace` (None: nothing). Raises TrustStoreError."""
        key = str(workspace.resolve())
        raw = self._read()["workspaces"].get(key)
        where = f"the trust store {self.path or '(memory)'}: workspace {key}"
        return None if raw is None else _entry(raw, where)

    def record(self, workspace: Path, trust: WorkspaceTrust) -> None:
        """Trust `trust` in `workspace` (replacing what was trusted there), atomically."""
        key = str(workspace.resolve())
        if self.path is None:
            self._memory[key] = trust
            return
        data = self._read()  # a corrupt store raises here: never written over
        data["version"] = VERSION
        data["workspaces"][key] = trust.as_json()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=".trust-", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, indent=1, sort_keys=True)
                out.write("\n")
            os.replace(temp, self.path)  # mkstemp's file is the person's only (0600)
        except OSError as exc:
            raise TrustStoreError(f"cannot write the trust store {self.path}: {exc}") from exc


def file_digest(path: Path) -> str | None:
    """The sha256 of a regular file's bytes; None when there is none at `path`."""
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


def folder_digest(folder: str) -> str:
    """One digest of a skill folder: every file's path and bytes (links by their
    target), in path order; past MAX_FILES or MAX_BYTES, names and sizes only."""
    digest = hashlib.sha256()
    files, read = 0, 0
    for top, dirs, names in os.walk(folder):
        dirs.sort()
        # Links to folders are not followed: they count as links, like links to files.
        links = [d for d in dirs if os.path.islink(os.path.join(top, d))]
        dirs[:] = [d for d in dirs if d not in links]
        for name in sorted([*names, *links]):
            path = os.path.join(top, name)
            rel = os.path.relpath(path, folder)
            files += 1
            try:
                info = os.lstat(path)
            except OSError:
                digest.update(f"{rel}\0gone\n".encode("utf-8", "surrogateescape"))
                continue
            if stat.S_ISLNK(info.st_mode):
                target = os.readlink(path)
                digest.update(f"{rel}\0link\0{target}\n".encode("utf-8", "surrogateescape"))
            elif files > MAX_FILES or read + info.st_size > MAX_BYTES:
                digest.update(f"{rel}\0size\0{info.st_size}\n".encode("utf-8", "surrogateescape"))
            else:
                read += info.st_size
                content = file_digest(Path(path)) or "unreadable"
                digest.update(f"{rel}\0{content}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()
