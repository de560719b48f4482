"""Turn configuration into the ordered list of skills roots (highest precedence first).

The precedence table (docs/skills.md shows it): workspace > project > user > extra >
bundled, and inside the workspace and user levels Lily's own folder first, then the
Agent Skills standard's `.agents/skills`, then Claude Code's `.claude/skills`. The
project level is those two folders in the folders above the workspace, up to its
repository's root or, outside a repository, up to the folder Jupyter serves (whose own
`skills/` counts too), nearest first. A name found in two roots is the higher root's
skill; the lower copy is `shadowed`.
"""

from __future__ import annotations

import os
from pathlib import Path

from lily_kernel.config import LilyConfig
from lily_kernel.skills.models import SkillRoot, SkillSource

__all__ = ["ARRIVING_SOURCES", "MAX_PROJECT_LEVELS", "OTHER_AGENT_FOLDERS", "bundled_dir",
           "lily_home", "project_folders", "resolve_skill_roots", "served_root"]

_PACKAGE = Path(__file__).resolve().parent.parent
# Where other agents keep skills, under the workspace, the folders above it in its
# repository, and the person's home folder, in precedence order (after Lily's own; off
# with `skills_other_agents: false`).
OTHER_AGENT_FOLDERS = (".agents/skills", ".claude/skills")
# The levels whose skills arrive with a folder (and wait for trust, trust/review.py).
ARRIVING_SOURCES: frozenset[SkillSource] = frozenset({"workspace", "project"})
# How far above the workspace its repository's root is looked for (the Agent Skills
# client guide scans up to the repository root; a notebook sits a few folders down).
MAX_PROJECT_LEVELS = 5
REPOSITORY_MARK = ".git"  # a folder, or a file in a worktree or submodule


def bundled_dir(name: str) -> Path:
    """A bundled folder (`skills` or `persona`): inside the wheel, or the source checkout."""
    packaged = _PACKAGE / "_bundled" / name
    if packaged.is_dir():
        return packaged
    return _PACKAGE.parent / name


def lily_home(config: LilyConfig) -> Path:
    """The user's Lily folder: `home` from config, else `~/.lily`."""
    return config.home if config.home is not None else Path.home() / ".lily"


def project_folders(workspace: Path, home: Path, served: Path | None = None
                    ) -> tuple[Path, ...]:
    """The folders above `workspace` in its project, nearest first: from its parent up
    to the repository's root (the nearest folder holding `.git`) or, with no repository
    there, up to `served`, the folder Jupyter serves (`served_root`). None when the
    workspace is that root itself, or when no root is found within MAX_PROJECT_LEVELS
    folders (a served root: any number) strictly below the home folder and `/` (a home
    folder under git, or served, is the person's: its skills folders are the user level)."""
    workspace = Path(os.path.abspath(workspace))
    if os.path.lexists(workspace / REPOSITORY_MARK):
        return ()
    stops = {os.path.abspath(home), os.path.realpath(home)}
    top = Path(os.path.abspath(served)) if served is not None else None
    found: list[Path] = []
    for folder in workspace.parents:
        beyond = top is None or (top != folder and top not in folder.parents)
        if folder == folder.parent or str(folder) in stops or (
                len(found) == MAX_PROJECT_LEVELS and beyond):
            return ()
        found.append(folder)
        if os.path.lexists(folder / REPOSITORY_MARK) or folder == top:
            return tuple(found)
    return ()


def served_root(project: tuple[Path, ...], served: Path | None) -> Path | None:
    """The folder Jupyter serves when it ends `project` outside any repository: its own
    `skills/` is a project root (a repository's is where skills are written, not run)."""
    if not project or served is None or project[-1] != Path(os.path.abspath(served)):
        return None
    return None if os.path.lexists(project[-1] / REPOSITORY_MARK) else project[-1]


def resolve_skill_roots(
    config: LilyConfig, workspace: Path, home: Path | None = None,
    served: Path | None = None,
) -> tuple[SkillRoot, ...]:
    """Every skills root in precedence order. `home` is the person's home folder (where
    `~/.agents/skills` and `~/.claude/skills` are); `Path.home()` when not given;
    `served`: the folder Jupyter serves, when known (`jupyter_root`).
    Lily's own `skills/` is not looked for above the workspace in a repository: there
    it is where skills are written (Lily's own checkout's `skills/` is its bundled
    root), not where a project installs them; outside one, the served folder's is the
    project's (docs/skills.md, "Roots and precedence")."""
    home = home if home is not None else Path.home()
    others = OTHER_AGENT_FOLDERS if config.skills_other_agents else ()
    project = project_folders(workspace, home, served)
    top = served_root(project, served)
    project = project if others else (top,) if top is not None else ()
    paths: list[tuple[SkillSource, Path]] = [
        ("workspace", config.skills_workspace_dir or workspace / "skills"),
        *(("workspace", workspace / folder) for folder in others),
        *(("project", above / folder) for above in project
          for folder in (("skills",) if above == top else ()) + others),
        ("user", config.skills_user_dir or lily_home(config) / "skills"),
        *(("user", home / folder) for folder in others),
        *(("extra", Path(path)) for path in config.skills_extra_dirs),
        ("bundled", config.skills_bundled_dir or bundled_dir("skills")),
    ]
    return tuple(SkillRoot(source=source, path=str(path), exists=path.exists())
                 for source, path in paths)
