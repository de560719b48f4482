"""What `/skills` shows (commands/listing.py): held skills apart from the excluded ones,
and a ranking that counts as matching only what scores the ranker's threshold."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from lily_kernel.commands.listing import ranked_result, skills_result
from lily_kernel.display import Details, Table, Text, render_html, render_plain
from lily_kernel.environment import Workspace
from lily_kernel.skills import (
    RELEVANT_SCORE,
    LoadRules,
    SkillIndex,
    SkillRoot,
    SkillSnapshot,
    load_snapshot,
)
from lily_kernel.skills.embedding import find_encoder_files
from tests.conftest import skill_text, write_skill

# Eleven skills, as a newcomer had: eight of their own and three more.
ELEVEN = {
    "commit": "Write git commit messages that follow the conventions",
    "weather": "Current weather and forecasts for a city",
    "haiku": "Write a haiku poem, five seven five syllables",
    "matplotlib": "Plotting library for figures and charts",
    "pdf": "Read, split and merge PDF documents",
    "pr-writer": "Write pull request descriptions",
    "sql": "Query databases with SQL",
    "translate": "Translate text between languages",
    "docx": "Create and edit Word documents",
    "slack": "Post messages to Slack channels",
    "regex": "Build and explain regular expressions",
}


def snapshot_of(root: Path, skills: dict[str, str]) -> SkillSnapshot:
    for name, summary in skills.items():
        write_skill(root, name, skill_text(summary))
    return load_snapshot((SkillRoot("workspace", str(root), True),), LoadRules())


class SmallCosines:
    """A sentence encoder as the real one behaves on a request no skill is about: every
    skill gets a small cosine (0.10 down to 0.01, by its place), none a large one."""

    def skills(self, skills: Sequence[Any], stop: threading.Event | None = None) -> Any:
        import numpy as np

        return np.array([[0.1 - 0.009 * i] for i in range(len(skills))], dtype=np.float32)

    def missing(self, skills: Sequence[Any]) -> int:
        return 0

    def request(self, text: str) -> Any:
        import numpy as np

        return np.array([1.0], dtype=np.float32)


def test_near_zero_scores_are_no_match(tmp_path: Path) -> None:
    """"/skills 17 times 23" said "10 of 11 match": every skill scored a little."""
    snap = snapshot_of(tmp_path, ELEVEN)
    ranker = SkillIndex(SmallCosines()).ranker(snap)
    assert len(ranker.rank("17 times 23")) == 11  # all above 0, all far under 1
    result = ranked_result(snap, ranker, "17 times 23")
    assert result.title == 'Skills for "17 times 23": 0 of 11 match (snapshot 1)'
    text = render_plain(result)
    assert ("No skill matches these words (none scores 1.00, the relevance threshold); "
            "the nearest: commit (0.23), docx (0.21), haiku (0.19).") in text
    assert not any(isinstance(b, Table) for b in result.blocks)


def test_a_match_is_listed_and_the_near_misses_are_counted_apart(tmp_path: Path) -> None:
    snap = snapshot_of(tmp_path, ELEVEN)
    result = ranked_result(snap, SkillIndex(SmallCosines()).ranker(snap),
                           "weather forecasts for Oslo")
    assert result.title.endswith(": 1 of 11 match (snapshot 1)")
    [table] = [b for b in result.blocks if isinstance(b, Table)]
    assert [row[0] for row in table.rows] == ["weather"]
    assert float(table.rows[0][1]) >= RELEVANT_SCORE
    assert Text("10 more score under 1.00, the relevance threshold: no match.") in result.blocks


def test_without_meaning_a_word_match_under_the_threshold_is_no_match(tmp_path: Path) -> None:
    """A word found only in one skill's body scores far under the threshold."""
    write_skill(tmp_path, "c", "---\nsummary: Gamma\n---\n" + "Mentions walruses once. "
                + "Other words. " * 200)
    snap = snapshot_of(tmp_path, {"a": "Alpha", "b": "Beta"})
    ranker = SkillIndex().ranker(snap)
    [found] = ranker.rank("walruses")
    assert 0 < found.score < RELEVANT_SCORE
    result = ranked_result(snap, ranker, "walruses")
    assert result.title.endswith(": 0 of 3 match (snapshot 1)")
    assert "the nearest: c (" in render_plain(result)


needs_encoder = pytest.mark.skipif(find_encoder_files() is None,
                                   reason="the `local` extra's encoder is not installed")


@needs_encoder
@pytest.mark.embedded
def test_with_the_real_encoder_arithmetic_matches_no_skill(
        workspace: Path, environ: dict[str, str]) -> None:
    for name, summary in ELEVEN.items():
        write_skill(workspace / "skills", name, f"---\ndescription: {summary}\n---\n")
    env = Workspace.load(workspace, environ)
    snap = env.load_snapshot(1)
    ranker = SkillIndex(env.skill_vectors).ranker(snap)
    assert len(ranker.rank("17 times 23")) > 1  # the encoder scores them all a little
    result = ranked_result(snap, ranker, "17 times 23")
    assert ranker.ranked_by == "words and meaning"
    assert result.title == 'Skills for "17 times 23": 0 of 11 match (snapshot 1)'
    assert "No skill matches these words (none scores 1.00" in render_plain(result)
    chart = ranked_result(snap, ranker, "make a bar chart of these numbers")
    [table] = [b for b in chart.blocks if isinstance(b, Table)]
    assert table.rows[0][0] == "matplotlib"
    assert chart.title.endswith(f": {len(table.rows)} of 11 match (snapshot 1)")


# --- held skills: waiting for trust, not excluded ------------------------------------


@pytest.fixture
def held(workspace: Path, environ: dict[str, str],
         monkeypatch: pytest.MonkeyPatch) -> SkillSnapshot:
    """A downloaded folder with eight skills of its own (held) and the person's three."""
    monkeypatch.delenv("LILY_TRUST", raising=False)
    person = {k: v for k, v in environ.items() if k != "LILY_TRUST"}
    names = list(ELEVEN)
    for name in names[:8]:
        write_skill(workspace / ".claude" / "skills", name, skill_text(ELEVEN[name]))
    for name in names[8:]:
        write_skill(Path(person["LILY_HOME"]) / "skills", name, skill_text(ELEVEN[name]))
    write_skill(Path(person["LILY_HOME"]) / "skills", "broken", "---\nsummary: [x\n---\n")
    return Workspace.load(workspace, person).load_snapshot(1)


def test_skills_says_held_apart_from_excluded(held: SkillSnapshot) -> None:
    """Before trust, /skills said "3 available" with the folder's skills under
    "Excluded (9)"."""
    result = skills_result(held)
    assert result.title.startswith(
        "Skills: 3 available, 8 held until you trust this folder (snapshot 1, digest ")
    assert Text("8 held until you trust this folder (a chat cell asks once a session; or "
                "run `lily trust` in a terminal).") in result.blocks
    sections = {b.summary: b for b in result.blocks if isinstance(b, Details)}
    assert list(sections) == ["Held until you trust this folder (8)", "Excluded (1)"]
    [table] = sections["Held until you trust this folder (8)"].blocks
    assert isinstance(table, Table) and table.headers == ("name", "summary", "source", "why")
    assert table.rows[0] == ("commit", ELEVEN["commit"], "workspace", "new: not trusted yet")
    [excluded] = sections["Excluded (1)"].blocks
    assert isinstance(excluded, Table) and [r[0] for r in excluded.rows] == ["broken"]
    assert "<details><summary>Held until you trust this folder (8)</summary>" in render_html(
        result)


def test_a_ranking_names_the_held_skills_that_would_match(held: SkillSnapshot) -> None:
    """"/skills weather" said "No skill matches" where a held skill would."""
    index = SkillIndex()
    result = ranked_result(held, index.ranker(held), "weather forecasts", None,
                           index.held_ranker(held))
    assert result.title.endswith(": 0 of 3 match (snapshot 1)")
    text = render_plain(result)
    assert "No skill matches these words." in text
    assert text.endswith("Held until you trust this folder: weather would match.")
    mine = ranked_result(held, index.ranker(held), "slack channels", None,
                         index.held_ranker(held))  # the person's own skill matches
    assert mine.title.endswith(": 1 of 3 match (snapshot 1)")
    assert "would match" not in render_plain(mine)


def test_held_skills_never_reach_the_catalog_invocation_or_the_shortlist(
        held: SkillSnapshot) -> None:
    from lily_kernel.prompting.selection import request_shortlist
    from lily_kernel.prompting.system import build_catalog

    assert len(held.held) == 8 and held.get("weather") is None
    assert {s.name for s in held.skills} == {"docx", "slack", "regex"}
    assert "weather" not in build_catalog(held.skills, 100_000).text
    ranker = SkillIndex().ranker(held)
    assert request_shortlist(held, ranker, "weather forecasts").ranked == ()
    assert [r.name for r in ranker.rank("weather forecasts")] == []
