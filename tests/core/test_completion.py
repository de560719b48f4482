"""Tab completion and inspection over a snapshot."""

from __future__ import annotations

from pathlib import Path

import pytest

from lily_kernel.commands import complete, inspect, render_plain
from lily_kernel.skills import Host, LoadRules, SkillRoot, SkillSnapshot, load_snapshot
from tests.conftest import skill_text, write_skill


@pytest.fixture
def snapshot(tmp_path: Path) -> SkillSnapshot:
    write_skill(tmp_path, "plan_compiler", skill_text("Plans", command="plan"))
    write_skill(tmp_path, "pdf", skill_text("PDFs"))
    write_skill(tmp_path, "echo", skill_text("Echo"))
    return load_snapshot((SkillRoot("workspace", str(tmp_path), True),), LoadRules(),
                         Host(platform="linux", environ={}, which=lambda n: None))


def test_slash_lists_commands_and_aliases(snapshot: SkillSnapshot) -> None:
    done = complete("/", 1, snapshot, ["default"])
    assert done.matches == ("/agent", "/help", "/plan", "/reload_skills", "/skill", "/skills")
    assert (done.cursor_start, done.cursor_end) == (0, 1)
    assert complete("  /sk", 5, snapshot, []).matches == ("/skill", "/skills")
    assert complete("  /sk", 5, snapshot, []).cursor_start == 2


def test_skill_names_after_skill_and_help(snapshot: SkillSnapshot) -> None:
    done = complete("/skill p", 8, snapshot, [])
    assert (done.matches, done.cursor_start, done.cursor_end) == (("pdf", "plan_compiler"), 7, 8)
    assert complete("/help ", 6, snapshot, []).matches == ("echo", "pdf", "plan_compiler")
    assert complete("/agent d", 8, snapshot, ["default", "critic"]).matches == ("default",)


def test_no_completion_elsewhere(snapshot: SkillSnapshot) -> None:
    assert complete("hello /s", 8, snapshot, []).matches == ()
    assert complete("/skill pdf more", 15, snapshot, []).matches == ()
    assert complete("/ls ", 4, snapshot, []).matches == ()


def test_inspection_shows_skill_help(snapshot: SkillSnapshot) -> None:
    result = inspect("/skill plan_compiler", 10, snapshot)
    assert result is not None and "Plans" in render_plain(result)
    alias = inspect("/plan now", 2, snapshot)
    assert alias is not None and alias.title == "Skill plan_compiler"
    assert inspect("/skill nothing", 10, snapshot) is None
