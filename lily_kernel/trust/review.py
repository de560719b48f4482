"""Which workspace skills are held until the person trusts them, and what trusting means.

A skill is workspace-level when it arrives with the folder: found in a workspace-level
root (`skills/`, `.agents/skills/`, `.claude/skills/`) or a project-level one (those
two in the folders above the workspace in its repository, skills/roots.py), or,
whatever root found it, when its real folder is inside the workspace, or in a root only
its lily.yaml names; unless a root of the person's own configuration (their user roots,
extra roots and the bundled one, as their variables and defaults say, or their command
line; never the workspace's lily.yaml) holds it: Lily's own checkout, whose `skills/`
is the bundled root, or a home folder opened as the workspace. Location decides, not
the root: a root a lily.yaml adds inside the workspace, or a link into one, brings
nothing trusted. Until the person trusts the workspace, and again after one
of them is added or changed, they are held: not in the snapshot's skills (so not in the
catalog, not invocable, no scripts), but listed as `untrusted` diagnostics saying why,
and kept whole in the snapshot's `held` (for `/skills` to say which would match; nothing
else reads it). A project-level skill is keyed in the workspace's entry by its path from
the workspace (`../../.claude/skills/x`). Pure but for reading the skill folders to
digest them.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from lily_kernel.skills import (
    ARRIVING_SOURCES,
    Diagnostic,
    DiagnosticKind,
    Skill,
    SkillSnapshot,
)
from lily_kernel.skills.digest import DigestCache, folder_digest
from lily_kernel.trust.store import WorkspaceTrust

__all__ = ["HeldSkill", "hold_untrusted", "skill_folder_digest"]

SKILL_FILE = "SKILL.md"


@dataclass(frozen=True)
class HeldSkill:
    """A workspace skill the person has not trusted at its present content."""

    name: str
    path: str  # its SKILL.md
    folder: str  # its folder, relative to the workspace (the trust store's key)
    digest: str
    why: Literal["new", "changed"]

    def line(self) -> str:
        return f"{self.name} ({self.folder}, {self.why})"


def _inside(path: str, folders: list[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip(os.sep) + os.sep) for f in folders)


def skill_folder_digest(skill: Skill, cache: DigestCache | None = None) -> str:
    """A skill folder's digest, its SKILL.md taken as the loader read it."""
    return folder_digest(os.path.dirname(skill.path), cache, {SKILL_FILE: skill.digest})


def _below(path: str, top: str) -> str | None:
    """`path` relative to `top` when it is inside it (plain strings: relpath is slow)."""
    prefix = top.rstrip(os.sep) + os.sep
    return path[len(prefix):] if path.startswith(prefix) else None


def _key(folder: str, workspace: Path) -> str:
    """The store's key of a skill folder: the path it was found at, from the workspace.
    Not its real path: a link `skills/echo -> helper` is a second name, and a name
    decides which skill wins, so it is trusted on its own."""
    return _below(folder, str(workspace)) or os.path.relpath(folder, workspace)


class _RealPaths:
    """Real paths of skill folders, each root's resolved once: below its root, a folder
    with no link on the way is its root's real path joined with the rest (realpath is
    pure Python, and a thousand of them cost more than the digests)."""

    def __init__(self) -> None:
        self._roots: dict[str, str] = {}

    def of(self, folder: str, root: str) -> str:
        rel = _below(folder, root)
        if rel is None:
            return os.path.realpath(folder)
        parts = rel.split(os.sep)
        if any(os.path.islink(os.path.join(root, *parts[:i + 1])) for i in range(len(parts))):
            return os.path.realpath(folder)
        return os.path.join(self.root(root), rel)

    def root(self, root: str) -> str:
        """A root's real path, resolved once."""
        if root not in self._roots:
            self._roots[root] = os.path.realpath(root)
        return self._roots[root]


def hold_untrusted(
    snapshot: SkillSnapshot,
    workspace: Path,
    trusted: WorkspaceTrust | None,
    everything: bool = False,
    person_roots: tuple[str, ...] = (),
    cache: DigestCache | None = None,
) -> tuple[SkillSnapshot, dict[str, str], tuple[HeldSkill, ...]]:
    """The snapshot with the workspace-level skills not trusted at their digest held,
    each kept one carrying the digest it was trusted at; the digests of every
    workspace-level skill (what trusting now would record); the held ones.
    `everything`: the workspace is trusted as a whole for this process (LILY_TRUST):
    nothing is held and nothing is digested. `person_roots`: the roots of the person's
    own configuration."""
    if everything:
        return snapshot, {}, ()
    own = [os.path.realpath(r) for r in person_roots]
    top = os.path.realpath(workspace)
    real_paths = _RealPaths()
    digests: dict[str, str] = {}
    held: list[HeldSkill] = []
    held_skills: list[Skill] = []
    kept: list[Skill] = []
    for skill in snapshot.skills:
        folder = os.path.dirname(skill.path)
        root = next((r.path for r in snapshot.roots
                     if folder.startswith(r.path.rstrip(os.sep) + os.sep)), None)
        real = real_paths.of(folder, root) if root else os.path.realpath(folder)
        # Arrived with the folder: found in a workspace-level or project-level root,
        # inside the workspace, or in a root the person's own configuration does not
        # name (one its lily.yaml names, outside it: what appears there later must wait
        # for trust too).
        arrived = (skill.source in ARRIVING_SOURCES or _inside(real, [top])
                   or (root is not None and real_paths.root(root) not in own))
        if not arrived or _inside(real, own):
            kept.append(skill)
            continue
        rel = _key(folder, workspace)
        digest = digests[rel] = skill_folder_digest(skill, cache)
        known = trusted.skills.get(rel) if trusted is not None else None
        if known == digest:
            kept.append(replace(skill, trusted_digest=digest))
        else:
            held.append(HeldSkill(skill.name, skill.path, rel, digest,
                                  "changed" if known is not None else "new"))
            held_skills.append(replace(skill, trusted_digest=known))  # None: new
    if cache is not None:
        cache.save()
    if not held:
        return _with_skills(snapshot, kept, ()), digests, ()
    why = {"new": "this workspace is not trusted",
           "changed": "changed since this workspace was trusted"}
    diagnostics = tuple(Diagnostic(
        DiagnosticKind.UNTRUSTED, h.name, skill.source, h.path,
        f"held: {why[h.why]}; trust it when Lily asks, with /trust, or with lily trust "
        f"{workspace} in a terminal")
        for h, skill in zip(held, held_skills, strict=True))
    return (_with_skills(snapshot, kept, diagnostics, held, held_skills), digests,
            tuple(held))


def _with_skills(snapshot: SkillSnapshot, skills: list[Skill],
                   diagnostics: tuple[Diagnostic, ...],
                   held: list[HeldSkill] | None = None,
                   held_skills: list[Skill] | None = None) -> SkillSnapshot:
    """The snapshot with these skills, these diagnostics added and the held skills kept
    apart; its digest covers what is held too."""
    if not held and list(snapshot.skills) == skills:
        return snapshot
    overall = hashlib.sha256(snapshot.digest.encode())
    for h in held or ():
        overall.update(f"held\0{h.name}\0{h.digest}\n".encode())
    return SkillSnapshot(version=snapshot.version,
                         digest=overall.hexdigest() if held else snapshot.digest,
                         roots=snapshot.roots, skills=tuple(skills),
                         diagnostics=(*snapshot.diagnostics, *diagnostics),
                         held=tuple(held_skills or ()))
