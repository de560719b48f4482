"""Turn configuration into the ordered list of skills roots (highest precedence first).

The precedence table (docs/skills.md shows it): workspace > user > extra > bundled, and
inside the workspace and user levels Lily's own folder first, then the Agent Skills
standard's `.agents/skills`, then Claude Code's `.claude/skills`. A name found in two
roots is the higher root's skill; the lower copy is `shadowed`.
"""

from __future__ import annotations

from pathlib import Path

from lily_kernel.config import LilyConfig
from lily_kernel.skills.models import SkillRoot, SkillSource

__all__ = ["OTHER_AGENT_FOLDERS", "bundled_dir", "lily_home", "resolve_skill_roots"]

_PACKAGE = Path(__file__).resolve().parent.parent
# Where other agents keep skills, under the workspace and under the person's home
# folder, in precedence order (after Lily's own; off with `skills_other_agents: false`).
OTHER_AGENT_FOLDERS = (".agents/skills", ".claude/skills")


def bundled_dir(name: str) -> Path:
    """A bundled folder (`skills` or `persona`): inside the wheel, or the source checkout."""
    packaged = _PACKAGE / "_bundled" / name
    if packaged.is_dir():
        return packaged
    return _PACKAGE.parent / name


def lily_home(config: LilyConfig) -> Path:
    """The user's Lily folder: `home` from config, else `~/.lily`."""
    return config.home if config.home is not None else Path.home() / ".lily"


def resolve_skill_roots(
    config: LilyConfig, workspace: Path, home: Path | None = None
) -> tuple[SkillRoot, ...]:
    """Every skills root in precedence order. `home` is the person's home folder (where
    `~/.agents/skills` and `~/.claude/skills` are); `Path.home()` when not given."""
    home = home if home is not None else Path.home()
    others = OTHER_AGENT_FOLDERS if config.skills_other_agents else ()
    paths: list[tuple[SkillSource, Path]] = [
        ("workspace", config.skills_workspace_dir or workspace / "skills"),
        *(("workspace", workspace / folder) for folder in others),
        ("user", config.skills_user_dir or lily_home(config) / "skills"),
        *(("user", home / folder) for folder in others),
        *(("extra", Path(path)) for path in config.skills_extra_dirs),
        ("bundled", config.skills_bundled_dir or bundled_dir("skills")),
    ]
    return tuple(SkillRoot(source=source, path=str(path), exists=path.exists())
                 for source, path in paths)
