"""Snapshot digest and reload diff (SPEC §2.4)."""

from __future__ import annotations

from pathlib import Path

from lily_kernel.skills import Host, LoadRules, SkillRoot, diff_snapshots, load_snapshot
from tests.conftest import skill_text, write_skill

LINUX = Host(platform="linux", environ={}, which=lambda name: None)


def snap(path: Path, version: int = 1):  # type: ignore[no-untyped-def]
    return load_snapshot((SkillRoot("workspace", str(path), True),), LoadRules(), LINUX, version)


def test_digest_depends_on_content_not_on_time(tmp_path: Path) -> None:
    write_skill(tmp_path, "a", skill_text("a"))
    first = snap(tmp_path)
    assert snap(tmp_path).digest == first.digest
    write_skill(tmp_path, "a", skill_text("a, edited"))
    assert snap(tmp_path).digest != first.digest


def test_digest_covers_excluded_winners(tmp_path: Path) -> None:
    write_skill(tmp_path, "bad", "---\nsummary: [x\n---\n")
    first = snap(tmp_path)
    write_skill(tmp_path, "bad", "---\nsummary: [y\n---\n")
    assert snap(tmp_path).digest != first.digest


def test_diff_reports_added_removed_changed(tmp_path: Path) -> None:
    write_skill(tmp_path, "keep", skill_text("keep"))
    write_skill(tmp_path, "edit", skill_text("edit"))
    write_skill(tmp_path, "drop", skill_text("drop"))
    old = snap(tmp_path)
    write_skill(tmp_path, "edit", skill_text("edit v2"))
    (tmp_path / "drop" / "SKILL.md").unlink()
    write_skill(tmp_path, "new", skill_text("new"))
    diff = diff_snapshots(old, snap(tmp_path, 2))
    assert (diff.added, diff.removed, diff.changed) == (("new",), ("drop",), ("edit",))
    assert not diff.empty
    assert diff_snapshots(old, old).empty
