"""The session's skill snapshot as the MCP skills extension (SEP-2640) serves it.

Each available skill of the snapshot (its roots, precedence, eligibility and trust holds
already applied: a held skill is not in it) is one `skill://<name>/SKILL.md` entry whose
resources are every file of its folder (hidden ones and links left out) with its sha256
digest and size; fastmcp's `SkillManifestProvider` speaks `skills/list`, `skills/get`
and `resources/read`. The frontmatter is the skill's own, with Lily's name for it (the
folder's) and, without a description, its summary. A skill the extension cannot carry
(a name outside its rule, no description, a value that is not JSON, too many files) is
left out with a reason. A file is read when a client reads it, and refused when its
bytes are no longer those the digest was made from. Every read of a skill's file here
(the digests at the start, a client's read) opens it from its skill folder, never
through a link, never waiting on a FIFO, bounded (`read_skill_bytes`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import errno
import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastmcp.skills import SkillFile, SkillFrontmatter, SkillManifest
from fastmcp.skills._constants import MAX_SKILL_BYTES, MAX_SKILL_FILES
from fastmcp.skills.provider import SkillFileResource, SkillManifestProvider
from pydantic import ValidationError

from lily_kernel.errors import ToolError
from lily_kernel.host_files import read_inside
from lily_kernel.skills import Skill, SkillSnapshot
from lily_kernel.skills.fields import Frontmatter

__all__ = ["SnapshotSkills", "skill_manifests"]


def _files(folder: Path) -> list[str]:
    """The skill's files by their path in it (POSIX): regular files, no link and nothing
    hidden (`.git`, `.DS_Store`); a folder's files by name, then its folders' (os.walk's
    order), a link to a folder not followed, a folder that cannot be listed skipped.
    One `scandir` per folder, its entries' types as listed (no `stat` per file)."""
    found: list[str] = []

    def visit(path: str, prefix: str) -> None:
        try:
            with os.scandir(path) as listing:
                entries = sorted((e for e in listing if not e.name.startswith(".")),
                                 key=lambda e: e.name)
        except OSError:
            return
        folders = []
        for entry in entries:
            try:
                if entry.is_file(follow_symlinks=False):
                    found.append(prefix + entry.name)
                elif entry.is_dir(follow_symlinks=False):
                    folders.append(entry)
            except OSError:
                continue
        for entry in folders:
            visit(entry.path, f"{prefix}{entry.name}/")

    visit(os.fspath(folder), "")
    return found


IN_THREAD_BYTES = 1024 * 1024  # a file past this is read off the event loop


def read_skill_bytes(folder: Path, rel: str, limit: int) -> bytes:
    """A file of a skill's folder, opened as host_files opens what could be swapped (no
    link on the way, no FIFO, a regular file), at most `limit` bytes (more is an
    OSError: the file is not what a skill may hold)."""
    if any(part in ("", ".", "..") for part in rel.split("/")):
        raise OSError(errno.EINVAL, "not a path inside the skill's folder")
    data = read_inside(folder, rel, limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"over {limit:,} bytes")
    return data


def _why_not(exc: OSError) -> str:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return "it, or a folder on its way, is now a link"
    return exc.strerror or str(exc)


def _json(value: Any) -> Any:
    """A YAML value as JSON has it (dates as ISO text, tuples as lists)."""
    if isinstance(value, tuple | list):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _json(v) for k, v in dataclasses.asdict(value).items() if v not in ((), None)}
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return value


def _frontmatter(skill: Skill) -> dict[str, Any]:
    """The skill's frontmatter keys as written (the ones Lily reads, and the rest)."""
    found: dict[str, Any] = {}
    for f in dataclasses.fields(Frontmatter):
        value = getattr(skill.front, f.name)
        if value is not None and value != f.default:
            found[f.metadata.get("lily", {}).get("key") or f.name] = _json(value)
    found.update(_json(skill.extra))
    found["name"] = skill.name  # Lily's identity: the folder's name
    found["description"] = skill.description or skill.summary
    return found


def _manifest(skill: Skill) -> SkillManifest:
    """The skill's entry; raises ValueError when the extension cannot carry it (OSError
    when a file cannot be read as `read_skill_bytes` reads)."""
    front = SkillFrontmatter.model_validate(_frontmatter(skill))
    folder = Path(skill.path).parent
    files = _files(folder)
    too_many = ValueError(f"more than {MAX_SKILL_FILES} files or {MAX_SKILL_BYTES:,} bytes")
    if len(files) > MAX_SKILL_FILES:
        raise too_many
    entries, left = {}, MAX_SKILL_BYTES
    for rel in files:
        try:
            data = read_skill_bytes(folder, rel, left)
        except OSError as exc:
            if exc.errno == errno.EFBIG:
                raise too_many from None
            raise
        left -= len(data)
        entries[rel] = SkillFile.model_construct(
            digest=f"sha256:{hashlib.sha256(data).hexdigest()}", size=len(data))
    return SkillManifest.model_construct(frontmatter=front, files=entries)


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
    if isinstance(exc, OSError):
        return f"a file cannot be read: {_why_not(exc)}"
    return str(exc)


def skill_manifests(snapshot: SkillSnapshot) -> tuple[dict[str, SkillManifest], list[str]]:
    """The snapshot's skills as manifests by name, and a line for each one left out."""
    manifests: dict[str, SkillManifest] = {}
    left_out: list[str] = []
    for skill in snapshot.skills:
        try:
            manifests[skill.name] = _manifest(skill)
        except (OSError, ValueError) as exc:
            left_out.append(f"{skill.name}: not served ({_why(exc)})")
    return manifests, left_out


class SnapshotSkills(SkillManifestProvider):
    """The manifests, made once (the snapshot is the session's), and each skill's folder
    to read a file from when a client asks for it."""

    def __init__(self, manifests: Mapping[str, SkillManifest], folders: Mapping[str, Path]
                 ) -> None:
        super().__init__()
        self._manifests = dict(manifests)
        self._folders = dict(folders)

    async def load_manifests(self) -> Mapping[str, SkillManifest]:
        return self._manifests

    async def _is_served(self, path: str, manifest: SkillManifest) -> bool:
        """Every file of every manifest is this provider's to read, and `lily mcp` has
        no per-caller authorization: fastmcp's check (a lookup per file, per request:
        half of a 1,000-skill `skills/list`) would always say yes."""
        return True

    async def read_file(self, resource: SkillFileResource) -> bytes:
        """The file's bytes, read as `read_skill_bytes` reads (never through a link,
        never waiting on a FIFO, at most its listed size), off the event loop when
        large; refused when they are not the bytes the server listed."""
        folder, size = self._folders[resource.skill_path], resource.file.size
        try:
            if size > IN_THREAD_BYTES:
                data = await asyncio.to_thread(read_skill_bytes, folder,
                                               resource.file_path, size)
            else:
                data = read_skill_bytes(folder, resource.file_path, size)
        except OSError as exc:
            raise ToolError(f"{resource.uri} is not the file this server listed "
                            f"({_why_not(exc)}); restart `lily mcp` to serve it again."
                            ) from None
        if f"sha256:{hashlib.sha256(data).hexdigest()}" != resource.file.digest:
            raise ToolError(f"{resource.uri} changed since this server listed it; "
                            "restart `lily mcp` to serve it again.")
        return data
