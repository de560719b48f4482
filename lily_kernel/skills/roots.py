"""Turn configuration into the ordered list of skills roots (highest precedence first)."""

from __future__ import annotations

from pathlib import Path

from lily_kernel.config import LilyConfig
from lily_kernel.skills.models import SkillRoot

__all__ = ["bundled_dir", "lily_home", "resolve_skill_roots"]

_PACKAGE = Path(__file__).resolve().parent.parent


def bundled_dir(name: str) -> Path:
    """A bundled folder (`skills` or `persona`): inside the wheel, or the source checkout."""
    packaged = _PACKAGE / "_bundled" / name
    if packaged.is_dir():
        return packaged
    return _PACKAGE.parent / name


def lily_home(config: LilyConfig) -> Path:
    """The user's Lily folder: `home` from config, else `~/.lily`."""
    return config.home if config.home is not None else Path.home() / ".lily"


def resolve_skill_roots(config: LilyConfig, workspace: Path) -> tuple[SkillRoot, ...]:
    """workspace > user > bundled, each from config or its default."""
    paths = (
        ("workspace", config.skills_workspace_dir or workspace / "skills"),
        ("user", config.skills_user_dir or lily_home(config) / "skills"),
        ("bundled", config.skills_bundled_dir or bundled_dir("skills")),
    )
    return tuple(
        SkillRoot(source=source, path=str(path), exists=path.exists())  # type: ignore[arg-type]
        for source, path in paths
    )
