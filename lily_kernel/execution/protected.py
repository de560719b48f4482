"""The workspace's protected entries, found by rule and never by a count: what the
sandbox keeps there read-only or hidden, what a run made there that it may not keep,
and what a sandbox that lives on (the Python kernel's) shows of its mounts.

The rules (docs/execution.md, "Protected paths"; execution/mounts.py lays them):

- Lily's own names (`WORKSPACE_READ_ONLY`) are read-only whether or not they exist.
- At the workspace's top, every dot-entry is read-only (`.venv/`, `.vscode/`,
  `.pre-commit-config.yaml`…) but Jupyter's checkpoints (`WORKSPACE_ORDINARY`); one
  named like a dotenv file (`WORKSPACE_HIDDEN`) is hidden instead.
- At the top and one level down, every environment (a folder holding `pyvenv.cfg` or
  `conda-meta/`, whatever its name) and `.git/` are read-only, and dotenv files hidden;
  but the workspace's own repository (`.git`, a folder at its top) is written by git
  (`git commit`, `git branch`, `git worktree add`), all of it but what git reads as its
  configuration or runs later (`GIT_READ_ONLY`, `GIT_WORKTREE_READ_ONLY`), read-only
  whether or not it exists; the folders holding those are pinned (`Found.pinned`: a
  mount point cannot be moved away and made again without them).
- The top and each of its folders are listed whole: no number of other entries pushes
  one of these out of sight. A folder that cannot be listed is hidden whole, an entry
  whose kind cannot be told is taken for an environment: nothing is left open because
  a run changed a mode.
- A dot-entry a run made at the top, and a protected link there it replaced, do not
  outlive the run (`remove_made`).
- Runs write the skills folder (`WORKSPACE_SKILLS`; what they write waits for trust),
  which stays a folder; where they may not (trust by the environment), the tool
  context names it among Lily's own paths.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import re
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lily_kernel.host_files import open_folder

__all__ = [
    "GIT_READ_ONLY",
    "GIT_WORKTREE_READ_ONLY",
    "WORKSPACE_HIDDEN",
    "WORKSPACE_ORDINARY",
    "WORKSPACE_READ_ONLY",
    "WORKSPACE_SKILLS",
    "Found",
    "find_protected",
    "held_paths",
    "link_holds",
    "mount_points",
    "own_repository",
    "remove_made",
]

# In the workspace, read-only whether or not they exist yet: what Lily reads as
# configuration or instructions, and what runs code later. A missing one is held by no
# placeholder (nothing the person did not make appears in their workspace, #37): what a
# run makes there is set aside after it (`remove_made`'s `watched`), so none is planted.
WORKSPACE_READ_ONLY = ("lily.yaml", ".lily", "persona", ".agents", ".claude", ".git")
# The workspace's skills folder: runs write it (what they write waits for the person's
# trust at its digest: trust/review.py), as a folder only (`Found.pinned`, `remove_made`).
WORKSPACE_SKILLS = "skills"
# Unreadable (an empty file or folder in their place), at the top and one level down:
# dotenv files (`.env`, `.env.local`…) and direnv's `.envrc` (run on entering a folder).
WORKSPACE_HIDDEN = (".env", ".env.*", ".envrc")
# In the workspace's own repository (`.git`, a folder), read-only whether or not they
# exist: what git reads as configuration or runs later. `config` (hooksPath, fsmonitor,
# filters, aliases, includes), `config.worktree` (read with extensions.worktreeConfig),
# `hooks/`, `info/` (attributes name the filters and diff drivers that run), `modules/`
# (each submodule's repository, its own config and hooks). `commondir` names another
# folder as the repository (its config, its hooks): one that exists is kept read-only,
# and since an empty one stops git, a missing one is held by no placeholder: one a run
# made is set aside after it (`remove_made`).
GIT_READ_ONLY = ("config", "config.worktree", "hooks", "info", "modules")
GIT_COMMONDIR = "commondir"
# In each linked worktree's folder that exists (`.git/worktrees/<name>/`), what redirects
# or configures the worktree; a worktree a run adds is the run's, as its checkout is.
GIT_WORKTREE_READ_ONLY = ("commondir", "config.worktree")
# Dot-entries at the top that are the workspace's like any file: Jupyter's checkpoints
# of the notebooks (which a run may write anyway). Neither kept nor set aside: made on
# a notebook's first save, one would restart the session's kernel or be moved away.
WORKSPACE_ORDINARY = (".ipynb_checkpoints",)


@dataclass(frozen=True)
class Found:
    """What the rules protect in one workspace, as it was when looked at: paths as
    listed (a link among them is protected where it points, by whoever mounts)."""

    workspace: Path
    hidden: tuple[Path, ...] = ()  # dotenv files, and folders that cannot be listed
    read_only: tuple[Path, ...] = ()  # the top's dot-entries, environments, .git/
    dots: frozenset[str] = frozenset()  # the top's dot-entries, Lily's names aside
    links: tuple[tuple[str, str], ...] = ()  # the top's protected links, where each points
    # Writable folders holding protected entries, bound on themselves so that a run cannot
    # move one away and make it again without them (the own repository's `.git`, its
    # `worktrees/` and each linked worktree's folder), and the skills folder.
    pinned: tuple[Path, ...] = ()
    skills_missing: bool = False  # no skills folder when looked at: one made stays a folder


# What every hidden name starts with, looked at first: a folder may hold a million names.
_HIDDEN_START = os.path.commonprefix(WORKSPACE_HIDDEN)  # noqa: RUF071 - names, not paths


def _hidden_name(name: str) -> bool:
    return name.startswith(_HIDDEN_START) and any(
        fnmatch.fnmatchcase(name, pattern) for pattern in WORKSPACE_HIDDEN)


def _listed(folder: Path) -> list[os.DirEntry[str]]:
    """Every entry of `folder` (raises OSError when it cannot be listed)."""
    with os.scandir(folder) as entries:
        return list(entries)


def _environment(entry: os.DirEntry[str]) -> bool:
    """A virtual or conda environment, through a link too; an entry that cannot be
    looked into counts as one (a run may have taken the permission it needs away)."""
    try:
        if not entry.is_dir():
            return False
        path = Path(entry.path)
        return (path / "pyvenv.cfg").is_file() or (path / "conda-meta").is_dir()
    except OSError:
        return True


def _kept(entry: os.DirEntry[str], top: bool) -> bool:
    """Whether the rules keep `entry` read-only (a dotenv name is hidden instead): at
    the top, a skills folder that is not a folder (a link is kept where it points)."""
    name = entry.name
    return ((top and ((name.startswith(".") and name not in WORKSPACE_ORDINARY)
                      or name in WORKSPACE_READ_ONLY
                      or (name == WORKSPACE_SKILLS and not entry.is_dir(follow_symlinks=False))))
            or name == ".git" or _environment(entry))


def own_repository(workspace: Path) -> Path | None:
    """The workspace's own repository, which git may write: `.git` at its top when it
    is a folder (not a link, nor a file naming a repository elsewhere, which stay
    read-only whole)."""
    git = workspace / ".git"
    return git if git.is_dir() and not git.is_symlink() else None


def _worktree_config(git: Path) -> bool:
    """Whether the repository's config turns on per-worktree configuration (then a
    missing `config.worktree` is held too)."""
    try:
        with open(git / "config", "rb") as config:
            return b"worktreeconfig" in config.read(1 << 20).lower()
    except OSError:
        return True  # what it says cannot be known: as if it did


def _git_rules(git: Path) -> tuple[list[Path], list[Path]]:
    """The own repository's (pinned folders, paths read-only whether or not they exist):
    its `GIT_READ_ONLY` and an existing `commondir`; for each linked worktree's folder,
    its `GIT_WORKTREE_READ_ONLY` that exist (a missing `config.worktree` too when the
    config reads one)."""
    per_worktree = _worktree_config(git)
    held = [git / name for name in GIT_READ_ONLY
            if name != "config.worktree" or per_worktree or (git / name).exists()]
    if os.path.lexists(git / GIT_COMMONDIR):
        held.append(git / GIT_COMMONDIR)
    pinned = [git]
    worktrees = git / "worktrees"
    if worktrees.is_dir() and not worktrees.is_symlink():
        pinned.append(worktrees)
        try:
            folders = [Path(e.path) for e in _listed(worktrees)
                       if e.is_dir(follow_symlinks=False)]
        except OSError:
            folders, held = [], [*held, worktrees]  # cannot be looked into: read-only whole
        for folder in folders:
            pinned.append(folder)
            held += [folder / name for name in GIT_WORKTREE_READ_ONLY
                     if os.path.lexists(folder / name) or per_worktree]
    return pinned, held


def held_paths(workspace: Path) -> list[Path]:
    """The paths of `workspace` read-only whether or not they exist: Lily's names
    (`WORKSPACE_READ_ONLY`; the own repository's `.git` but what git may write) and the
    own repository's (`_git_rules`)."""
    git = own_repository(workspace)
    names = [workspace / n for n in WORKSPACE_READ_ONLY if git is None or n != ".git"]
    return names if git is None else [*names, *_git_rules(git)[1]]


def find_protected(workspace: Path) -> Found:
    """The entries of `workspace` (resolved) that the rules protect. Raises OSError
    when its top cannot be listed (then nothing can be protected, nor run)."""
    hidden: list[Path] = []
    read_only: list[Path] = []
    links: list[tuple[str, str]] = []
    top = _listed(workspace)
    git = own_repository(workspace)
    pinned: list[Path] = []
    if git is not None:  # what git may not write there, as it exists
        pinned, held = _git_rules(git)
        read_only += [p for p in held if os.path.lexists(p)]
    skills = next((e for e in top if e.name == WORKSPACE_SKILLS), None)
    if skills is not None and skills.is_dir(follow_symlinks=False):
        pinned.append(Path(skills.path))  # cannot be moved away and made a link
    for entry in top:
        if _hidden_name(entry.name):
            hidden.append(Path(entry.path))
        elif git is not None and entry.name == ".git":
            continue
        elif _kept(entry, top=True):
            read_only.append(Path(entry.path))
        else:
            continue
        if entry.is_symlink():  # kept where it points; the link itself, by remove_made
            with contextlib.suppress(OSError):
                links.append((entry.name, os.readlink(entry.path)))
    for folder in top:
        if folder.name == ".git" or not folder.is_dir(follow_symlinks=False):
            continue
        try:
            inside = _listed(Path(folder.path))
        except OSError:
            hidden.append(Path(folder.path))  # what it holds cannot be known: all of it
            continue
        for entry in inside:
            if _hidden_name(entry.name):
                hidden.append(Path(entry.path))
            elif _kept(entry, top=False):
                read_only.append(Path(entry.path))
    dots = frozenset(e.name for e in top
                     if e.name.startswith(".") and e.name not in WORKSPACE_READ_ONLY)
    return Found(workspace, tuple(hidden), tuple(read_only), dots, tuple(links),
                 tuple(pinned), skills_missing=skills is None)


SET_ASIDE = ".lily/removed"  # where a run's forbidden dot-entries go (Lily's, read-only)


def _free(folder: int, name: str) -> str:
    """`name`, or `name-2`, `name-3`…: the first not taken in the open `folder`."""
    taken = name
    for number in range(2, 1000):
        try:
            os.stat(taken, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            return taken
        taken = f"{name}-{number}"
    raise FileExistsError(errno.EEXIST, "no free name", name)


def _set_aside(workspace: Path, name: str, stamp: str) -> None:
    """The entry `name` at the workspace's top moved into `.lily/removed/<stamp>/`,
    never deleted (it may be the person's, made during the run). Every folder on the
    way is opened without following a link (a downloaded folder's `.lily/removed` may be
    a link to a folder the sandbox can write, and from there to the person's home): with
    a link there, the entry is renamed at the top out of its dot-name instead
    (`lily-removed.envrc`). The move itself follows nothing: a link moves as a link."""
    # `name` may lie below the top (a skills root inside the workspace: `team/skills`),
    # its folder opened as the rest, and it is set aside as `team-skills`.
    parent, _, entry = name.rpartition("/")
    top = open_folder(workspace, parent)
    try:
        try:
            aside = open_folder(workspace, f"{SET_ASIDE}/{stamp}", make=True)
        except OSError:
            aside = top
            name_there = "lily-removed" + (entry if entry.startswith(".") else "-" + entry)
        else:
            name_there = name.replace("/", "-")
        try:
            os.rename(entry, _free(aside, name_there), src_dir_fd=top, dst_dir_fd=aside)
        finally:
            if aside != top:
                os.close(aside)
    finally:
        os.close(top)


def remove_made(found: Found, writable: Callable[[Path], bool],
                watched: Sequence[Path] = ()) -> tuple[str, ...]:
    """Undo what a run did at the top of `found`'s workspace that the rules forbid: a
    dot-entry that was not there when the run was planned is set aside into
    `.lily/removed/<time>/`, and so is what is now at a path of Lily's that was missing
    then (`watched`: `lily.yaml`, `persona/`, a skills root inside the workspace…) and
    a skills folder it made as a link or a file, a protected link it removed or
    replaced is made again (what was in its place set aside alike). Only where the run
    could write (`writable`): what the person makes meanwhile where it could not is
    theirs. The names undone."""
    workspace = found.workspace
    try:
        names = sorted(entry.name for entry in _listed(workspace))
    except OSError:
        return ()
    made = [name for name in names if name.startswith(".") and name not in found.dots
            and name not in WORKSPACE_READ_ONLY and name not in WORKSPACE_ORDINARY
            and writable(workspace / name)]
    made += [str(path.relative_to(workspace)) for path in watched
             if path.is_relative_to(workspace) and os.path.lexists(path)]
    skills = workspace / WORKSPACE_SKILLS
    if (found.skills_missing and WORKSPACE_SKILLS not in made and writable(skills)
            and os.path.lexists(skills) and (skills.is_symlink() or not skills.is_dir())):
        made.append(WORKSPACE_SKILLS)  # a link or a file made where a folder belongs
    moved = [(name, target) for name, target in found.links
             if writable(workspace / name) and not link_holds(workspace / name, target)]
    if (made or moved) and not os.access(workspace, os.W_OK):
        with contextlib.suppress(OSError):  # the run took the top's write permission
            workspace.chmod(stat.S_IMODE(workspace.stat().st_mode) | stat.S_IRWXU)
    undone: list[str] = []
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    for name in made:
        with contextlib.suppress(OSError):
            _set_aside(workspace, name, stamp)
            undone.append(name)
    for name, target in moved:
        with contextlib.suppress(OSError):
            if os.path.lexists(workspace / name):
                _set_aside(workspace, name, stamp)
            (workspace / name).symlink_to(target)
            undone.append(name)
    commondir = workspace / ".git" / GIT_COMMONDIR
    if (workspace / ".git") in found.pinned and commondir not in found.read_only \
            and os.path.lexists(commondir) and writable(commondir):
        with contextlib.suppress(OSError):
            _set_aside_in_git(workspace, stamp)
            undone.append(f".git/{GIT_COMMONDIR}")
    return tuple(undone)


def _set_aside_in_git(workspace: Path, stamp: str) -> None:
    """The own repository's `commondir` a run made, moved into `.lily/removed/<stamp>/`
    (each folder opened without following a link); where that cannot be made, removed:
    git must not read it."""
    git = open_folder(workspace, ".git")
    try:
        try:
            aside = open_folder(workspace, f"{SET_ASIDE}/{stamp}", make=True)
        except OSError:
            os.unlink(GIT_COMMONDIR, dir_fd=git)
            return
        try:
            os.rename(GIT_COMMONDIR, _free(aside, "git-commondir"), src_dir_fd=git,
                      dst_dir_fd=aside)
        finally:
            os.close(aside)
    finally:
        os.close(git)


def link_holds(link: Path, target: str) -> bool:
    """Whether `link` is (still) a link to `target`."""
    with contextlib.suppress(OSError):
        return link.is_symlink() and os.readlink(link) == target
    return False


_ESCAPED = re.compile(r"\\([0-7]{3})")


def _namespace(pid: int | str) -> str:
    return os.readlink(f"/proc/{pid}/ns/mnt")


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc/<pid>/stat)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with (contextlib.suppress(OSError, IndexError, ValueError),
                  open(f"/proc/{name}/stat", "rb") as status):
                if int(status.read().rsplit(b")", 1)[1].split()[1]) == pid:
                    found.append(int(name))
    return found


def mount_points(bwrap: int) -> frozenset[Path] | None:
    """Where the sandbox bubblewrap runs as process `bwrap` has mounts, as its first
    process sees them: bubblewrap's child in a mount namespace other than Lily's (its
    code starts below that one, so a namespace it makes cannot take its place). None
    when that sandbox no longer runs."""
    ours = _namespace("self")
    for child in _children(bwrap):
        with contextlib.suppress(OSError):
            if _namespace(child) != ours:
                with open(f"/proc/{child}/mountinfo", encoding="utf-8",
                          errors="surrogateescape") as table:
                    return frozenset(
                        Path(_ESCAPED.sub(lambda m: chr(int(m[1], 8)), line.split()[4]))
                        for line in table if len(line.split()) > 4)
    return None
