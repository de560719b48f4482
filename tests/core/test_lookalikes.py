"""Skill names that look like other names get a warning saying so."""

# ruff: noqa: RUF001, RUF003 (lookalike letters are what is tested)
from __future__ import annotations

from pathlib import Path

from lily_kernel.skills import LoadRules, SkillRoot, load_snapshot
from lily_kernel.skills.lookalikes import skeleton
from tests.conftest import skill_text, write_skill


def test_a_cyrillic_lookalike_beside_its_ascii_twin_is_warned_about(tmp_path: Path) -> None:
    write_skill(tmp_path, "echo", skill_text("Echo"))
    write_skill(tmp_path, "\u0435cho", skill_text("Looks like echo"))  # Cyrillic е
    write_skill(tmp_path, "h\u0435lp", skill_text("Looks like the built-in"))
    write_skill(tmp_path, "caf\u00e9", skill_text("Accented, no twin"))
    snapshot = load_snapshot((SkillRoot("workspace", str(tmp_path), True),),
                             LoadRules(reserved_commands=frozenset({"help"})))
    warned = {d.skill: d.reason for d in snapshot.warnings}
    assert "echo" not in warned
    assert "U+0435 CYRILLIC SMALL LETTER IE" in warned["\u0435cho"]
    assert "it reads as 'echo'" in warned["\u0435cho"]
    assert "it reads as 'help'" in warned["h\u0435lp"]
    assert "U+00E9" in warned["caf\u00e9"] and "reads as" not in warned["caf\u00e9"]
    assert len(snapshot.skills) == 4  # warned about, not excluded


def test_skeletons_fold_what_draws_alike() -> None:
    assert skeleton("\u0440\u0430\u0443") == "pay"
    assert skeleton("ＥＣＨＯ") == "echo"
    assert skeleton("re\u0301port") == "report"
    assert skeleton("deploy") == "deploy"
