"""Which workspace skills are held until the person trusts them, and what trusting means.

Workspace-level skills (`skills/`, `.agents/skills/`, `.claude/skills/` in the
workspace) arrive with a folder. Until the person trusts the workspace, and again
after one of them is added or changed, they are held: not in the snapshot's skills (so
not in the catalog, not invocable, no scripts), but listed as `untrusted` diagnostics
saying why. User, extra and bundled skills are the person's own and always trusted; so
is a workspace root that is also one of those roots (Lily's checkout, where `skills/` is
the bundled root). Pure but for reading the skill folders to digest them.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lily_kernel.skills import Diagnostic, DiagnosticKind, SkillSnapshot
from lily_kernel.trust.store import WorkspaceTrust, folder_digest

__all__ = ["HeldSkill", "hold_untrusted"]


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
    return any(path == f or path.startswith(f + os.sep) for f in folders)


def hold_untrusted(
    snapshot: SkillSnapshot,
    workspace: Path,
    trusted: WorkspaceTrust | None,
    everything: bool = False,
) -> tuple[SkillSnapshot, dict[str, str], tuple[HeldSkill, ...]]:
    """The snapshot with the workspace skills not trusted at their digest held; the
    digests of every workspace skill (what trusting now would record); the held ones.
    `everything`: the workspace is trusted as a whole for this process (LILY_TRUST)."""
    own = [os.path.realpath(r.path) for r in snapshot.roots if r.source != "workspace"]
    digests: dict[str, str] = {}
    held: list[HeldSkill] = []
    kept = []
    for skill in snapshot.skills:
        folder = os.path.dirname(skill.path)
        if skill.source != "workspace" or _inside(os.path.realpath(folder), own):
            kept.append(skill)
            continue
        rel = os.path.relpath(folder, workspace)
        digest = digests[rel] = folder_digest(folder)
        known = trusted.skills.get(rel) if trusted is not None else None
        if everything or known == digest:
            kept.append(skill)
        else:
            held.append(HeldSkill(skill.name, skill.path, rel, digest,
                                  "changed" if known is not None else "new"))
    if not held:
        return snapshot, digests, ()
    why = {"new": "this workspace is not trusted",
           "changed": "changed since this workspace was trusted"}
    diagnostics = [*snapshot.diagnostics, *(Diagnostic(
        DiagnosticKind.UNTRUSTED, h.name, "workspace", h.path,
        f"held: {why[h.why]}; trust it when Lily asks, or run `lily trust {workspace}`")
        for h in held)]
    overall = hashlib.sha256(snapshot.digest.encode())
    for h in held:
        overall.update(f"held\0{h.name}\0{h.digest}\n".encode())
    return SkillSnapshot(version=snapshot.version, digest=overall.hexdigest(),
                         roots=snapshot.roots, skills=tuple(kept),
                         diagnostics=tuple(diagnostics)), digests, tuple(held)
