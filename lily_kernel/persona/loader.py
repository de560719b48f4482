"""Load an agent's persona: SOUL, IDENTITY, USER, AGENTS, each from the highest root.

Per file, precedence is workspace > user > bundled. A missing file is skipped; a file
over the size cap is truncated with a visible marker and a notice for the person.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "PERSONA_FILES",
    "Persona",
    "PersonaFile",
    "PersonaRoots",
    "list_agents",
    "load_persona",
]

PERSONA_FILES = ("SOUL.md", "IDENTITY.md", "USER.md", "AGENTS.md")
DEFAULT_AGENT = "default"


@dataclass(frozen=True)
class PersonaRoots:
    """Folders holding `<agent>/` persona folders, highest precedence first; `workspace`
    None while the workspace's persona waits for the person's trust."""

    workspace: Path | None
    user: Path
    bundled: Path

    def ordered(self) -> tuple[tuple[str, Path], ...]:
        found = (("workspace", self.workspace), ("user", self.user), ("bundled", self.bundled))
        return tuple((source, path) for source, path in found if path is not None)


@dataclass(frozen=True)
class PersonaFile:
    name: str
    source: str
    path: str
    content: str
    truncated_from: int | None = None  # original length in characters, when truncated


@dataclass(frozen=True)
class Persona:
    """An agent's persona as read at session start or on `/agent`; stable after that."""

    agent: str
    files: tuple[PersonaFile, ...]
    notices: tuple[str, ...] = ()


def list_agents(roots: PersonaRoots) -> list[str]:
    """Agent names found in any root, plus `default`, in code-point order."""
    names = {DEFAULT_AGENT}
    for _, root in roots.ordered():
        try:
            entries = list(os.scandir(root))
        except OSError:
            continue
        names.update(e.name for e in entries if not e.name.startswith(".") and _is_dir(e))
    return sorted(names)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # a link loop or a vanished entry is not an agent
        return False


def _inside(path: Path, root: Path) -> bool:
    """Whether `path`'s real file is in `root`'s real folder. A workspace's persona file
    linked elsewhere (~/.ssh/id_rsa, /proc/self/environ) would put that file in the
    system prompt, and what the person trusted (the folder's digest: links by their
    target) would not cover a file outside it."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real.startswith(top.rstrip(os.sep) + os.sep)


def _read_text(path: Path) -> tuple[str, str | None]:
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError:
        return data.decode("utf-8-sig", errors="replace"), (
            f"{path} is not valid UTF-8; undecodable bytes were replaced."
        )


def load_persona(agent: str, roots: PersonaRoots, max_chars: int) -> Persona:
    """Read the agent's four files (each from its highest root) in their fixed order."""
    files: list[PersonaFile] = []
    notices: list[str] = []
    for name in PERSONA_FILES:
        for source, root in roots.ordered():
            path = root / agent / name
            if not path.is_file():
                continue
            if source == "workspace" and not _inside(path, root):
                notices.append(f"{path} is a link to a file outside the workspace's persona "
                               "folder; it was skipped.")
                break
            try:
                content, notice = _read_text(path)
            except OSError as exc:
                notices.append(f"{path} cannot be read ({exc.strerror}); it was skipped.")
                break
            if notice:
                notices.append(notice)
            truncated_from = None
            if len(content) > max_chars:
                truncated_from = len(content)
                content = (
                    content[:max_chars]
                    + f"\n\n[... {name} truncated: {truncated_from:,} characters, "
                    f"limit {max_chars:,}]"
                )
                notices.append(
                    f"{name} of agent '{agent}' ({source}) has {truncated_from:,} characters; "
                    f"only the first {max_chars:,} are used."
                )
            files.append(PersonaFile(name, source, str(path), content, truncated_from))
            break
    return Persona(agent=agent, files=tuple(files), notices=tuple(notices))
