"""The sandbox's file system: the mounts bubblewrap lays over the host's, in order.

`plan_mounts` applies the sandbox's rules (below; docs/skills.md, "The sandbox", shows
them as a table) and returns a `MountPlan`: bubblewrap's arguments, and the placeholders
to remove after the run. Every decision asks `cover`: which mount a path is under once
the mounts so far are laid, so nothing is mounted where the sandbox is already
read-only, hidden or private.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path

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

# In the workspace, read-only whether or not they exist yet: what Lily reads as
# configuration or instructions, and what runs code later. A missing one is held by an
# empty read-only placeholder for the run (removed after it), so none can be planted.
WORKSPACE_READ_ONLY = ("lily.yaml", ".lily", "persona", "skills", ".agents", ".claude",
                       ".git")
# In the workspace, unreadable (an empty file in their place) when they exist, at its
# top and in its folders one level down: dotenv files (`.env`, `.env.local`…) and
# direnv's `.envrc` (which also runs when the person enters the folder).
WORKSPACE_HIDDEN = (".env", ".env.*", ".envrc")
# Places that run code later, at the workspace's top and one level down, read-only: a
# virtual environment (a folder holding pyvenv.cfg), a conda environment (conda-meta/),
# a repository's .git/ (its hooks).
_SCANNED = 5_000  # entries looked at, at most, for these (a huge workspace is not walked)
# Besides: Lily's own files named by the tool context (every skills root, the persona
# folders, the Lily home and its trust store) are read-only; the home folder is an
# empty private one (no ~/.ssh, ~/.aws, ~/.config, ~/.netrc, dotfiles), through which
# the skill's folder and the interpreter's installation show read-only; /tmp and /run
# are private and empty; everything else is read-only.
# When the workspace is the home folder or holds it, the home folder's top is read-only
# by rule (not by a list of names): an empty read-only folder into which its existing
# entries not starting with "." are bound back, writable (a link as the same link), so
# its dotfiles are not there and nothing new can be made there, dotfile or not.
_FILE_SUFFIXES = (".yaml", ".yml", ".json", ".md", ".env")
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
    """The mounts in the order bubblewrap lays them."""

    mounts: tuple[Mount, ...]

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


def _near_top(workspace: Path) -> list[Path]:
    """The workspace's entries at its top and one level down (at most _SCANNED), in
    name order."""
    found: list[Path] = []
    try:
        top = sorted(workspace.iterdir())[:_SCANNED]
    except OSError:
        return []
    found += top
    for folder in top:
        if len(found) >= _SCANNED:
            break
        if folder.is_dir() and not folder.is_symlink() and folder.name != ".git":
            with contextlib.suppress(OSError):
                found += sorted(folder.iterdir())[: _SCANNED - len(found)]
    return found


def _runs_later(entry: Path) -> bool:
    return entry.is_dir() and not entry.is_symlink() and (
        entry.name == ".git" or (entry / "pyvenv.cfg").is_file()
        or (entry / "conda-meta").is_dir())


def _dotenv(entry: Path) -> bool:
    return entry.is_file() and any(fnmatch.fnmatchcase(entry.name, p) for p in WORKSPACE_HIDDEN)


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
    return Mount(held, Shows.EMPTY, placeholder=True,
                 folder=held != path or path.suffix not in _FILE_SUFFIXES)


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


def _keep(path: Path, laid: Sequence[Mount]) -> list[Mount]:
    """What keeps `path` from being written on the host, laid after `laid`: nothing
    where the sandbox already does (the mount over it is read-only, hidden or private,
    and none inside it is writable); a placeholder when it is missing; else a read-only
    bind over it, or over each writable mount inside it."""
    if not path.exists():
        return [_held(path)] if cover(laid, path).shows is Shows.HOST_WRITABLE else []
    kept = _read_only(path, laid) if cover(laid, path).shows is Shows.HOST_WRITABLE else []
    while writable := [m for m in _showing([*laid, *kept]) if m.shows is Shows.HOST_WRITABLE
                       and m.target.is_relative_to(path)]:
        kept += _read_only(writable[0].target, [*laid, *kept], writable[0].optional)
    return kept


def plan_mounts(workspace: Path, protected: Sequence[Path], home: Path | None,
                visible: Sequence[Path], writable: Sequence[Path] = ()) -> MountPlan:
    """The mounts for a script run in `workspace` (resolved), by the rules above.
    `protected`: Lily's own paths (the tool context's); `home`: the home folder
    (resolved); `visible`: what shows read-only through the private and hidden folders
    (the skill's folder, the interpreter's installation); `writable`: private folders
    of Lily's shown writable (a Python kernel's sockets), laid before the workspace."""
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
    near = _near_top(workspace)
    for path in _depth_first(map(_real, filter(_dotenv, near))):
        if cover(mounts, path).shows in (Shows.HOST_READ_ONLY, Shows.HOST_WRITABLE):
            mounts.append(Mount(path, Shows.EMPTY, folder=False))
    for path in _depth_first(map(_real, [*(workspace / n for n in WORKSPACE_READ_ONLY),
                                         *filter(_runs_later, near), *protected])):
        mounts += _keep(path, mounts)
    for path in visible:  # right after the mount it is under: later ones still apply in it
        under = cover(mounts, path)
        if (path.exists() and path != under.target
                and under.shows in (Shows.PRIVATE, Shows.EMPTY)):
            at = len(mounts) - [*reversed(mounts)].index(under)
            mounts.insert(at, Mount(path, Shows.HOST_READ_ONLY))
    return MountPlan(tuple(mounts))


def remove_placeholders(placeholders: Sequence[Path]) -> None:
    """Remove the empty files and folders bubblewrap made as mount points (never one
    that holds anything)."""
    for path in placeholders:
        with contextlib.suppress(OSError):
            if path.is_dir() and not path.is_symlink():
                path.rmdir()  # only when empty
            elif path.is_file() and path.stat().st_size == 0:
                path.unlink()
