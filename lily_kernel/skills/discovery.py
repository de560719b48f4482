"""Roots → candidates: the folders holding a SKILL.md under each root, nested ones too,
each name's copies in precedence order. Never reads a SKILL.md (skills/skill_file.py
does); a root that exists but cannot be listed is the one hard error.
"""

from __future__ import annotations

import errno
import os
from collections import defaultdict
from dataclasses import dataclass

from lily_kernel.errors import SkillRootError
from lily_kernel.skills.models import Diagnostic, DiagnosticKind, SkillRoot

__all__ = ["MAX_DEPTH", "MAX_FOLDERS", "SKILL_FILE", "Found", "discover_candidates"]

SKILL_FILE = "SKILL.md"
# Nested skills (`<root>/<group>/<skill>/SKILL.md`): a skill folder at most this many
# folders below its root, at most this many folders looked at in one root.
_SKILL_SUFFIX = os.sep + SKILL_FILE
MAX_DEPTH = 6
MAX_FOLDERS = 100_000
# Folders that are never groups of skills (besides hidden ones): packages and caches.
SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__"})


def _unreadable(root: SkillRoot, exc: OSError) -> SkillRootError:
    return SkillRootError(
        f"Cannot read the {root.source} skills root {root.path}: {exc.strerror or exc}.")


def _folders(path: str) -> list[tuple[str, str]]:
    """The non-hidden child folders of `path` (name, path), in name order."""
    found = []
    for entry in os.scandir(path):
        if entry.name.startswith(".") or entry.name in SKIPPED_FOLDERS:
            continue
        try:
            if entry.is_dir():
                found.append((entry.name, entry.path))
        except OSError:
            continue
    found.sort()
    return found


def _root_folders(root: SkillRoot) -> list[tuple[str, str]]:
    """The root's own child folders; a root that exists but cannot be listed raises."""
    if not root.exists:
        # Missing, or a link that leads nowhere: empty. A link loop is no missing root
        # but a broken one (os.path.exists says False for both): report it.
        try:
            os.stat(root.path)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _unreadable(root, exc) from exc
        return []
    try:
        return _folders(root.path)
    except FileNotFoundError:
        return []  # removed since it was looked at: a missing root is empty
    except OSError as exc:
        raise _unreadable(root, exc) from exc


@dataclass(frozen=True, slots=True)
class Found:
    """A folder holding a SKILL.md, in one root; the skill's name is the folder's."""

    root: SkillRoot
    folder: str
    skill_file: str


def _walk_root(root: SkillRoot, diagnostics: list[Diagnostic]) -> dict[str, list[Found]]:
    """The skill folders under one root, each name's copies shallowest first.

    A folder holding a SKILL.md is a skill and is not searched further; any other
    folder is a group, searched down to MAX_DEPTH, hidden folders skipped, at most
    MAX_FOLDERS folders in all (then a warning). Level by level, each in name order.
    """
    found: dict[str, list[Found]] = defaultdict(list)
    level, depth, looked, seen = _root_folders(root), 1, 0, {os.path.realpath(root.path)}
    while level:
        groups: list[tuple[str, str]] = []
        for name, folder in level:
            looked += 1
            if looked > MAX_FOLDERS:
                diagnostics.append(Diagnostic(
                    DiagnosticKind.WARNING, os.path.basename(root.path), root.source,
                    root.path, f"stopped looking for skills after {MAX_FOLDERS:,} folders "
                    "in this root; skills deeper or later in name order are not loaded"))
                return found
            # Plain strings and one access() call: this runs once per skill folder.
            skill_file = folder + _SKILL_SUFFIX
            if os.access(skill_file, os.F_OK, follow_symlinks=False):
                found[name].append(Found(root, folder, skill_file))
            elif depth < MAX_DEPTH:
                real = os.path.realpath(folder)
                if real in seen:  # a link back up the tree: already searched
                    continue
                seen.add(real)
                try:
                    groups.extend(_folders(folder))
                except OSError:
                    continue  # an unreadable folder inside a root holds no skill we can load
        level, depth = groups, depth + 1
    return found


def _same_root_copies(name: str, copies: list[Found], diagnostics: list[Diagnostic]) -> Found:
    """One root's copy of a name: the shallowest, then first in path order; the others
    are `shadowed`, naming it."""
    first = copies[0]
    for other in copies[1:]:
        diagnostics.append(Diagnostic(
            DiagnosticKind.SHADOWED, name, other.root.source, other.skill_file,
            f"another skill named '{name}' in the same root wins: {first.skill_file} "
            "(the shallowest, then the first in path order)"))
    return first


def discover_candidates(
    roots: tuple[SkillRoot, ...], diagnostics: list[Diagnostic] | None = None
) -> dict[str, list[Found]]:
    """Each skill name, with its copy in each root holding it, in precedence order.

    A root that is the same folder as a higher one (e.g. a notebook opened in Lily's
    own checkout) is read once, as the higher root: a skill cannot shadow itself.
    """
    diagnostics = diagnostics if diagnostics is not None else []
    found: dict[str, list[Found]] = defaultdict(list)
    seen: set[str] = set()
    for root in roots:
        real = os.path.realpath(root.path)
        if real in seen:
            continue
        seen.add(real)
        for name, copies in _walk_root(root, diagnostics).items():
            found[name].append(_same_root_copies(name, copies, diagnostics))
    return found
