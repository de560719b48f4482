"""The sandbox's file system: the mounts bubblewrap lays over the host's, in order.

`plan_mounts` applies the sandbox's rules (below, and the workspace's protected entries
found by rule in execution/protected.py; docs/skills.md, "The sandbox", shows them as a
table) and returns a `MountPlan`: bubblewrap's arguments, and the placeholders to remove
after the run. Every decision asks `cover`: which mount a path is under once the mounts
so far are laid, so nothing is mounted where the sandbox is already read-only, hidden or
private. The plan also says what changed since it was made (`MountPlan.changes`: a
run waits for no plan the workspace has outgrown, a live sandbox is replaced) and undoes
what a run made that the rules forbid (`MountPlan.tidy`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path

from lily_kernel.execution.protected import (
    WORKSPACE_HIDDEN,
    WORKSPACE_READ_ONLY,
    Found,
    find_protected,
    held_paths,
    link_holds,
    mount_points,
    remove_made,
)

__all__ = [
    "WORKSPACE_HIDDEN",
    "WORKSPACE_READ_ONLY",
    "Mount",
    "MountPlan",
    "Shows",
    "cover",
    "plan_mounts",
    "remove_placeholders",
]

# Besides: Lily's own files named by the tool context (every skills root, the persona
# folders, the Lily home and its trust store; the workspace's skills/ only where runs may
# not write it: `ToolContext.run_protected`) are read-only; the home folder is an
# empty private one (no ~/.ssh, ~/.aws, ~/.config, ~/.netrc, dotfiles), through which
# the skill's folder and the interpreter's installation show read-only; /tmp and /run
# are private and empty; everything else is read-only.
# When the workspace is the home folder or holds it, the home folder's top is read-only
# by rule (not by a list of names): an empty read-only folder into which its existing
# entries not starting with "." are bound back, writable (a link as the same link), so
# its dotfiles are not there and nothing new can be made there, dotfile or not.
_FILE_SUFFIXES = (".yaml", ".yml", ".json", ".md", ".env")
_FILE_NAMES = ("config", "config.worktree")  # a repository's (execution/protected.py)
# Emptied: where the host keeps its Unix sockets (Docker's, D-Bus's, the user's agents
# under /run/user/<uid>), which --unshare-net does not cut off.
_RUN_FOLDERS = (Path("/run"), Path("/var/run"))
# Laid first: the host's root, read-only, with a /dev and /proc of the sandbox's own.
_ROOT_ARGV = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")


class Shows(Enum):
    """What a mount shows at its target and below."""

    HOST_READ_ONLY = "the host's files, read-only"
    HOST_WRITABLE = "the host's files, writable"  # what the script writes stays
    PRIVATE = "an empty writable folder"  # what the script writes there vanishes
    EMPTY = "an empty read-only file or folder"  # hidden, or a placeholder
    LINK = "a link"  # where it points is covered by the mounts there
    # Nothing laid: a path of Lily's that is missing in the workspace (no placeholder for
    # the person to find, #37); what a run makes there is set aside after it.
    WATCHED = "the host's files, writable; what a run makes there is set aside after it"


@dataclass(frozen=True)
class Mount:
    """One mount at `target` (its source is the same path on the host)."""

    target: Path
    shows: Shows
    folder: bool = True  # EMPTY: a folder (a tmpfs), else a file (/dev/null)
    placeholder: bool = False  # its mount point is made on the host (removed after)
    optional: bool = False  # a bind skipped when its source is gone by the run
    link: str = ""  # LINK: where it points

    def argv(self) -> list[str]:
        target = str(self.target)
        if self.shows is Shows.HOST_READ_ONLY:
            return ["--ro-bind-try" if self.optional else "--ro-bind", target, target]
        if self.shows is Shows.HOST_WRITABLE:
            return ["--bind-try" if self.optional else "--bind", target, target]
        if self.shows is Shows.WATCHED:
            return []
        if self.shows is Shows.LINK:
            return ["--symlink", self.link, target]
        if self.shows is Shows.EMPTY and not self.folder:
            return ["--ro-bind", "/dev/null", target]
        return ["--tmpfs", target]  # PRIVATE, or EMPTY (made read-only last: MountPlan)


_ROOT = Mount(Path("/"), Shows.HOST_READ_ONLY)


def cover(mounts: Iterable[Mount], path: Path) -> Mount:
    """The mount `path` is under: the last one laid at it or at a folder holding it
    (bubblewrap applies them in order, and a later mount covers the earlier ones). Paths
    are compared by name: each is resolved first, so none lies under a link."""
    found = _ROOT
    for mount in mounts:
        if path.is_relative_to(mount.target):
            found = mount
    return found


@dataclass(frozen=True)
class MountPlan:
    """The mounts in the order bubblewrap lays them, and what the workspace's rules
    found when they were planned."""

    mounts: tuple[Mount, ...]
    found: Found
    installs: Path | None = None  # the workspace's environment for packages, writable

    @property
    def watched(self) -> tuple[Path, ...]:
        """Lily's missing paths in the workspace, held by no placeholder."""
        return tuple(m.target for m in self.mounts if m.shows is Shows.WATCHED)

    @property
    def placeholders(self) -> tuple[Path, ...]:
        return tuple(dict.fromkeys(m.target for m in self.mounts if m.placeholder))

    @property
    def argv(self) -> tuple[str, ...]:
        # An empty folder is made read-only after everything else, so that the mount
        # points of what shows through it (the skill's folder under ~/.lily) can be made.
        empty = [m.target for m in _showing(self.mounts) if m.shows is Shows.EMPTY and m.folder]
        return (*_ROOT_ARGV, *(arg for m in self.mounts for arg in m.argv()),
                *(arg for target in empty for arg in ("--remount-ro", str(target))))

    def changes(self, bwrap: int | None = None) -> tuple[str, ...]:
        """What this plan no longer protects (names in the workspace, else whole paths):
        an entry the rules protect that appeared, a protected link that points elsewhere,
        a protected path that is gone; and, for the sandbox running as bubblewrap's
        process `bwrap`, each mount no longer in its place (the host removed or replaced
        the entry it lay on: a mount holds an entry, not a name)."""
        workspace = self.found.workspace
        try:
            now = find_protected(workspace)
        except OSError:
            return (str(workspace),)
        changed = [p for p in now.hidden
                   if cover(self.mounts, _real(p)).shows not in (Shows.EMPTY, Shows.PRIVATE)]
        changed += [p for p in now.read_only if _real(p) != self.installs
                    and cover(self.mounts, _real(p)).shows is Shows.HOST_WRITABLE]
        changed += [workspace / name for name, target in self.found.links
                    if not link_holds(workspace / name, target)]
        changed += [p for p in self.watched if os.path.lexists(p)]  # made meanwhile
        laid = [m for m in self.mounts if m.shows is not Shows.LINK and not m.optional]
        if bwrap is None:  # before the run: what each mount lies on is there
            changed += [m.target for m in laid if not m.placeholder and m.shows in (
                Shows.HOST_READ_ONLY, Shows.EMPTY) and not os.path.lexists(m.target)]
        else:  # a mount that hides, empties or keeps writable files read-only is still laid
            there = mount_points(bwrap) or frozenset()
            changed += [m.target for at, m in enumerate(self.mounts) if m in laid
                        and m.target not in there and _guards(m, self.mounts[:at])]
        return tuple(dict.fromkeys(
            str(p.relative_to(workspace)) if p.is_relative_to(workspace) else str(p)
            for p in changed))

    def remove_made(self) -> tuple[str, ...]:
        """Undo what a run made at the workspace's top that the rules forbid: a new
        dot-entry, a protected link replaced (execution/protected.py). The names."""
        return remove_made(self.found,
                           lambda path: cover(self.mounts, path).shows is Shows.HOST_WRITABLE,
                           self.watched)

    def tidy(self) -> tuple[str, ...]:
        """After a run whose sandbox has ended: its placeholders removed, and what it
        made that the rules forbid undone (the names)."""
        remove_placeholders(self.placeholders)
        return self.remove_made()


def _guards(mount: Mount, before: Sequence[Mount]) -> bool:
    """Whether `mount` keeps anything from a run: it hides or empties what is there, or
    makes writable files read-only (not a folder shown through an empty one)."""
    return mount.shows in (Shows.EMPTY, Shows.PRIVATE) or (
        mount.shows is Shows.HOST_READ_ONLY
        and cover(before, mount.target).shows is Shows.HOST_WRITABLE)


def _real(path: Path) -> Path:
    """`path` with every link resolved (a mount's target must hold none: bubblewrap
    follows a link there, and cannot follow an absolute one)."""
    return Path(os.path.realpath(path))


def _depth_first(paths: Iterable[Path]) -> list[Path]:
    """Folders before what they hold, each path once."""
    return sorted(set(paths), key=lambda p: (len(p.parts), str(p)))


def _home_top(home: Path) -> list[Mount]:
    """The home folder's top, read-only by rule: an empty folder into which each entry
    not starting with "." comes back writable (a folder or file) or as the same link. A
    socket or device there stays out, as /run's do."""
    mounts = [Mount(home, Shows.EMPTY)]
    try:
        entries = sorted(home.iterdir())
    except OSError:
        return mounts
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_symlink():
            with contextlib.suppress(OSError):
                mounts.append(Mount(entry, Shows.LINK, link=os.readlink(entry)))
        elif entry.is_dir() or entry.is_file():
            mounts.append(Mount(entry, Shows.HOST_WRITABLE, optional=True))
    return mounts


def _held(path: Path) -> Mount:
    """The placeholder for a missing `path`: an empty read-only file or folder at its
    highest missing folder (bubblewrap makes it on the host, through a writable mount)."""
    held = path
    while not held.parent.exists():
        held = held.parent
    return Mount(held, Shows.EMPTY, placeholder=True, folder=held != path or (
        path.suffix not in _FILE_SUFFIXES and path.name not in _FILE_NAMES))


def _placeholder_kept(path: Path, workspace: Path) -> bool:
    """Whether a missing `path` is still held by a placeholder rather than watched: where
    the person does not look (outside the workspace, inside git's own folder `.git/`,
    whose hooks and config must not be planted between the Python kernel's runs)."""
    if not path.is_relative_to(workspace):
        return True
    parts = path.relative_to(workspace).parts
    return len(parts) > 1 and parts[0] == ".git"


def _showing(mounts: Sequence[Mount]) -> list[Mount]:
    """The mounts no later one covers, in order."""
    later: set[Path] = set()
    showing: list[Mount] = []
    for mount in reversed(mounts):
        if not any(p in later for p in (mount.target, *mount.target.parents)):
            showing.append(mount)
        later.add(mount.target)
    return showing[::-1]


def _read_only(path: Path, laid: Sequence[Mount], optional: bool = False) -> list[Mount]:
    """A read-only bind over `path`, then again each mount showing inside it (a
    writable one now read-only): a bind covers what was laid inside it before."""
    inside = [m for m in _showing(laid) if m.target != path and m.target.is_relative_to(path)]
    return [Mount(path, Shows.HOST_READ_ONLY, optional=optional),
            *(replace(m, shows=Shows.HOST_READ_ONLY) if m.shows is Shows.HOST_WRITABLE
              else replace(m) for m in inside)]


def _keep(path: Path, laid: Sequence[Mount], workspace: Path) -> list[Mount]:
    """What keeps `path` from being written on the host, laid after `laid`: nothing
    where the sandbox already does (the mount over it is read-only, hidden or private,
    and none inside it is writable); when it is missing, a watch at its highest missing
    folder (`_watched`); else a read-only bind over it, or over each writable mount
    inside it."""
    if not path.exists():
        if cover(laid, path).shows is not Shows.HOST_WRITABLE:
            return []
        held = _held(path)
        return [held if _placeholder_kept(held.target, workspace)
                else Mount(held.target, Shows.WATCHED)]
    kept = _read_only(path, laid) if cover(laid, path).shows is Shows.HOST_WRITABLE else []
    while writable := [m for m in _showing([*laid, *kept]) if m.shows is Shows.HOST_WRITABLE
                       and m.target.is_relative_to(path)]:
        kept += _read_only(writable[0].target, [*laid, *kept], writable[0].optional)
    return kept


def plan_mounts(workspace: Path, protected: Sequence[Path], home: Path | None,
                visible: Sequence[Path], writable: Sequence[Path] = (),
                installs: Path | None = None) -> MountPlan:
    """The mounts for a script run in `workspace` (resolved), by the rules above.
    `protected`: Lily's own paths (the tool context's); `home`: the home folder
    (resolved); `visible`: what shows read-only through the private and hidden folders
    (the skill's folder, the interpreter's installation); `writable`: private folders
    of Lily's shown writable (a Python kernel's sockets), laid before the workspace;
    `installs`: the workspace's environment for packages (execution/installs.py),
    writable though the rules keep environments and `.lily` read-only, laid last."""
    home = home if home is not None and home.is_dir() and home != Path("/") else None
    holds_home = home is not None and home.is_relative_to(workspace)
    mounts = [Mount(p, Shows.PRIVATE) for p in (Path("/tmp"), *_RUN_FOLDERS)
              if p.is_dir() and not p.is_symlink()]
    if home is not None and not holds_home:
        mounts.append(Mount(home, Shows.PRIVATE))
    mounts += [Mount(p, Shows.HOST_WRITABLE) for p in writable]
    mounts.append(Mount(workspace, Shows.HOST_WRITABLE))
    if home is not None and holds_home:
        mounts += _home_top(home)
    if cover(mounts, workspace / ".lily").shows is Shows.HOST_WRITABLE:
        with contextlib.suppress(OSError):  # Lily's own folder (kept read-only) is never
            (workspace / ".lily").mkdir()  # watched: Lily sets aside into it while runs go on
    found = find_protected(workspace)
    mounts += [Mount(p, Shows.HOST_WRITABLE) for p in found.pinned]  # (protected.py)
    # A link among them to nothing (yet) is held by nothing: no placeholder is made for
    # it (an editor's lock file is such a link). Lily's own paths are held missing or not.
    for path in _depth_first(p for p in map(_real, found.hidden) if p.exists()):
        if cover(mounts, path).shows in (Shows.HOST_READ_ONLY, Shows.HOST_WRITABLE):
            mounts.append(Mount(path, Shows.EMPTY, folder=path.is_dir()))
    kept = [p for p in map(_real, found.read_only) if p.exists()]
    for path in _depth_first([*map(_real, [*held_paths(workspace), *protected]), *kept]):
        mounts += _keep(path, mounts, workspace)
    for path in visible:  # right after the mount it is under: later ones still apply in it
        under = cover(mounts, path)
        if (path.exists() and path != under.target
                and under.shows in (Shows.PRIVATE, Shows.EMPTY)):
            at = len(mounts) - [*reversed(mounts)].index(under)
            mounts.insert(at, Mount(path, Shows.HOST_READ_ONLY))
    if installs is not None and installs.is_dir() and installs.is_relative_to(workspace):
        mounts.append(Mount(installs, Shows.HOST_WRITABLE))
    return MountPlan(tuple(mounts), found,
                     installs if installs is not None and installs.is_dir() else None)


def remove_placeholders(placeholders: Sequence[Path]) -> None:
    """Remove the empty files and folders bubblewrap made as mount points (never one
    that holds anything)."""
    for path in placeholders:
        with contextlib.suppress(OSError):
            if path.is_dir() and not path.is_symlink():
                path.rmdir()  # only when empty
            elif path.is_file() and path.stat().st_size == 0:
                path.unlink()
