"""Tab completion and inspection over a snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lily_kernel.commands import complete as complete_with
from lily_kernel.commands import default_commands
from lily_kernel.commands import inspect as inspect_with
from lily_kernel.display import render_plain
from lily_kernel.skills import Host, LoadRules, SkillRoot, SkillSnapshot, load_snapshot
from tests.conftest import skill_text, write_skill

COMMANDS = default_commands()


def complete(code: str, cursor: int, snapshot: SkillSnapshot, agents: list[str]) -> Any:
    return complete_with(code, cursor, snapshot, agents, COMMANDS)


def inspect(code: str, cursor: int, snapshot: SkillSnapshot) -> Any:
    return inspect_with(code, cursor, snapshot, COMMANDS)


@pytest.fixture
def snapshot(tmp_path: Path) -> SkillSnapshot:
    write_skill(tmp_path, "plan_compiler", skill_text("Plans", command="plan"))
    write_skill(tmp_path, "pdf", skill_text("PDFs"))
    write_skill(tmp_path, "echo", skill_text("Echo"))
    return load_snapshot((SkillRoot("workspace", str(tmp_path), True),), LoadRules(),
                         Host(platform="linux", environ={}, which=lambda n: None))


def test_slash_lists_commands_aliases_and_skills(snapshot: SkillSnapshot) -> None:
    done = complete("/", 1, snapshot, ["default"])
    assert done.matches == ("/agent", "/echo", "/help", "/mcp", "/network", "/new", "/pdf",
                            "/plan", "/plan_compiler", "/policy", "/python", "/reload_skills",
                            "/rerun", "/resume", "/skill", "/skills", "/trust")
    assert done.types == ("command", "skill", "command", "command", "command", "command",
                          "skill", "alias", "skill", *["command"] * 8)
    assert (done.cursor_start, done.cursor_end) == (0, 1)
    assert complete("  /sk", 5, snapshot, []).matches == ("/skill", "/skills")
    assert complete("  /sk", 5, snapshot, []).cursor_start == 2


def test_skill_names_after_skill_and_help(snapshot: SkillSnapshot) -> None:
    done = complete("/skill p", 8, snapshot, [])
    assert (done.matches, done.cursor_start, done.cursor_end) == (("pdf", "plan_compiler"), 7, 8)
    assert complete("/help ", 6, snapshot, []).matches == ("echo", "pdf", "plan_compiler")
    assert complete("/agent d", 8, snapshot, ["default", "critic"]).matches == ("default",)


def test_a_commands_choices_after_it(snapshot: SkillSnapshot) -> None:
    """`/policy a` + Tab completed nothing."""
    done = complete("/policy a", 9, snapshot, [])
    assert (done.matches, done.types, done.cursor_start) == (("ask", "auto"), ("choice",) * 2, 8)
    assert complete("/policy ", 8, snapshot, []).matches == ("ask", "auto")
    assert complete("/policy auto more", 17, snapshot, []).matches == ()


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


def test_hints_forms_and_skills_for_the_model_only(tmp_path: Path) -> None:
    write_skill(tmp_path, "argskill", "---\nargument-hint: <who> [what]\n---\nBody\n")
    write_skill(tmp_path, "listy", "---\nargument-hint: [issue]\n---\nBody\n")  # a YAML list
    write_skill(tmp_path, "quiet", "---\nuser-invocable: false\ncommand: q\n---\nBody\n")
    snap = load_snapshot((SkillRoot("workspace", str(tmp_path), True),), LoadRules())
    done = complete("/a", 2, snap, [])
    assert (done.matches, done.types) == (("/agent", "/argskill"),
                                          ("command", "skill <who> [what]"))
    forms = complete("/skill:", 7, snap, [])
    assert (forms.matches, forms.types) == (("/skill:argskill", "/skill:listy"),
                                            ("skill <who> [what]", "skill [issue]"))
    assert (forms.cursor_start, forms.cursor_end) == (0, 7)
    assert "/q" not in complete("/", 1, snap, []).matches
    assert "/quiet" not in complete("/", 1, snap, []).matches
    assert complete("/skill ", 7, snap, []).matches == ("argskill", "listy")
    assert complete("/help ", 6, snap, []).matches == ("argskill", "listy", "quiet")
    shown = inspect("/skill:argskill x", 5, snap)
    assert shown is not None and "<who> [what]" in render_plain(shown)
