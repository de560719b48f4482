"""The trust store: which workspaces the person trusts, and exactly what they trusted.

One JSON file under the Lily home (`<home>/trust.json`), outside every workspace, so a
downloaded folder cannot trust itself. Per workspace (its resolved path): the digest of
its `lily.yaml` when trusted, of its `persona/` folder, and each trusted workspace
skill's digest (its SKILL.md and every file of its folder, skills/digest.py) by the
folder's path inside the workspace. A skill added or changed since is not in it at that
digest: it is held again, the rest stay trusted. An entry with nothing in it still says
the person trusts the folder (its `write`s are not asked for that reason).

A store that cannot be read or parsed (not a regular file, not JSON, nested past what
the parser takes) raises `TrustStoreError` and is never written over: the person's
other trusted workspaces are not lost to one bad edit.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lily_kernel.errors import TrustStoreError

__all__ = ["TRUST_FILE", "TrustStore", "WorkspaceTrust"]

TRUST_FILE = "trust.json"
VERSION = 1
MAX_STORE_BYTES = 16 * 1024 * 1024  # a store past this is not one Lily wrote


@dataclass(frozen=True)
class WorkspaceTrust:
    """What the person trusted in one workspace."""

    config: str | None = None  # the trusted lily.yaml's digest (None: not trusted)
    skills: dict[str, str] = field(default_factory=dict)  # folder (relative) -> digest
    persona: str | None = None  # the trusted persona/ folder's digest

    def as_json(self) -> dict[str, Any]:
        from datetime import UTC, datetime  # when trust is recorded, not when read

        return {"lily_yaml": self.config, "persona": self.persona,
                "skills": dict(sorted(self.skills.items())),
                "trusted_at": datetime.now(UTC).isoformat(timespec="seconds")}


def _entry(raw: Any, where: str) -> WorkspaceTrust:
    if not isinstance(raw, dict):
        raise TrustStoreError(f"{where}: not an object")
    config, skills = raw.get("lily_yaml"), raw.get("skills", {})
    persona = raw.get("persona")
    if config is not None and not isinstance(config, str):
        raise TrustStoreError(f"{where}: 'lily_yaml' is not a digest")
    if persona is not None and not isinstance(persona, str):
        raise TrustStoreError(f"{where}: 'persona' is not a digest")
    if not isinstance(skills, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in skills.items()):
        raise TrustStoreError(f"{where}: 'skills' is not a mapping of folders to digests")
    return WorkspaceTrust(config, dict(skills), persona)


class TrustStore:
    """The store at `path`; `path` None keeps it in memory (replay never writes).
    `records`: each workspace's record of turns as the session's trust question names it
    (trust/record.py), read once a session (a session keeps its store across reloads)
    or, for a replay, as the recorded session's question named it."""

    def __init__(self, path: Path | None, entries: dict[str, WorkspaceTrust] | None = None,
                 records: dict[str, str | None] | None = None) -> None:
        self.path = path
        self._memory = dict(entries or {})
        self.records = dict(records or {})

    def _read(self) -> dict[str, Any]:
        if self.path is None:
            return {"version": VERSION,
                    "workspaces": {k: v.as_json() for k, v in self._memory.items()}}
        text = _read_store(self.path)
        if text is None:
            return {"version": VERSION, "workspaces": {}}
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            why = exc if isinstance(exc, ValueError) else "nested too deeply"
            raise TrustStoreError(
                f"the trust store {self.path} is not valid JSON ({why}); fix or remove it "
                "(workspace skills and settings stay held until then)") from None
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
            import tempfile

            fd, temp = tempfile.mkstemp(prefix=".trust-", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, indent=1, sort_keys=True)
                out.write("\n")
            os.replace(temp, self.path)  # mkstemp's file is the person's only (0600)
        except OSError as exc:
            raise TrustStoreError(f"cannot write the trust store {self.path}: {exc}") from exc


def _read_store(path: Path) -> str | None:
    """The store's text; None when there is none. Never blocks (a FIFO at its place is
    refused, not opened for a read that would wait forever)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TrustStoreError(f"cannot read the trust store {path}: {exc.strerror}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise TrustStoreError(f"the trust store {path} is not a regular file; remove it "
                                  "(workspace skills and settings stay held until then)")
        if info.st_size > MAX_STORE_BYTES:
            raise TrustStoreError(f"the trust store {path} is {info.st_size:,} bytes, more "
                                  "than Lily writes; fix or remove it")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TrustStoreError(f"cannot read the trust store {path}: {exc}") from exc
    finally:
        os.close(fd)
