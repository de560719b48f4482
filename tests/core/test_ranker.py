"""The skill ranker (skills/ranker.py): BM25 over a snapshot's skills, deterministic."""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from lily_kernel.skills import Host, LoadRules, SkillRanker, SkillRoot, load_snapshot, query_words
from tests.conftest import REPO, SHARED


@dataclass(frozen=True)
class Doc:
    name: str
    summary: str = ""
    when_to_use: str = ""
    body: str = ""
    description: str = ""


def names(ranker: SkillRanker, text: str) -> list[str]:
    return [r.name for r in ranker.rank(text)]


def test_the_name_the_summary_and_stems_match() -> None:
    ranker = SkillRanker([
        Doc("scikit-learn", "Machine learning in Python: classification, regression"),
        Doc("matplotlib", "Plotting library for figures"),
        Doc("weather", "Current conditions and forecasts"),
    ])
    assert names(ranker, "train a classifier with scikit")[0] == "scikit-learn"
    assert names(ranker, "learn")[0] == "scikit-learn"  # `scikit-learn` is two words
    assert names(ranker, "I am plotting some figures") == ["matplotlib"]  # plotting ~ plot
    assert names(ranker, "is it raining? what's the weather") == ["weather"]


def test_words_of_one_stem_count_once() -> None:
    ranker = SkillRanker([Doc("charts", "Plot charts"), Doc("other", "Something else")])
    assert ranker.words("plot plots plotting plotted, charts") == ["plot", "charts"]
    assert ranker.words("plots, charts and plotting") == ["plots", "charts"]  # in order
    assert ranker.rank("plot plots plotting plotted") == ranker.rank("plot")


def test_the_description_counts_beside_a_summary() -> None:
    ranker = SkillRanker([Doc("a", "Short line", description="Use for parquet files"),
                          Doc("b", "Other")])
    assert names(ranker, "parquet") == ["a"]


def test_everyday_words_are_not_looked_up() -> None:
    ranker = SkillRanker([Doc("helper", "What you need, how and when: the thing to do")])
    assert query_words("Hello! What is the way to do it?") == []
    assert ranker.rank("hello, how are you?") == []
    assert query_words("Plot, plot the PLOT data") == ["plot", "data"]


def test_ties_are_broken_by_name_and_the_order_never_changes() -> None:
    docs = [Doc(name, "formats a table") for name in ("zeta", "alpha", "mid")]
    ranker = SkillRanker(docs)
    first = ranker.rank("table")
    assert [r.name for r in first] == ["alpha", "mid", "zeta"]
    assert len({r.score for r in first}) == 1 and first[0].score > 0
    assert SkillRanker(list(reversed(docs))).rank("table") == first
    assert all(ranker.rank("table") == first for _ in range(5))


def test_the_body_counts_less_than_the_name_and_summary() -> None:
    ranker = SkillRanker([
        Doc("charts", "Draw charts", body="Uses parquet files sometimes."),
        Doc("parquet", "Read and write parquet files"),
    ])
    ranked = ranker.rank("parquet")
    assert [r.name for r in ranked] == ["parquet", "charts"]
    assert ranked[0].score > 3 * ranked[1].score


def test_when_to_use_is_read() -> None:
    ranker = SkillRanker([Doc("deploy", "Ship the app", when_to_use="after a release tag"),
                          Doc("other", "Something else")])
    assert names(ranker, "we cut a release") == ["deploy"]


def test_empty_summaries_odd_names_and_non_ascii() -> None:
    ranker = SkillRanker([Doc("empty"), Doc("données_été", "Analyse des données d'été"),
                          Doc('quo"te', 'a "quoted" summary'), Doc("日本語", "テキストの翻訳")])
    assert names(ranker, "données") == ["données_été"]
    assert names(ranker, '"quoted" summary') == ['quo"te']
    assert names(ranker, "テキストの翻訳") == ["日本語"]
    assert ranker.rank("empty")[0].name == "empty"  # matched by its name alone
    assert ranker.rank("AND OR NOT NEAR * ( )") == []  # FTS5 syntax is never passed through


def test_a_limit_keeps_the_best_and_a_copy_ranks_the_same() -> None:
    ranker = SkillRanker([Doc(f"s{i}", "csv " * (i + 1)) for i in range(8)])
    assert len(ranker.rank("csv", limit=3)) == 3
    assert copy.deepcopy(ranker).rank("csv") == ranker.rank("csv")


def test_the_snapshot_keeps_one_ranker_of_its_model_visible_and_hidden_skills(
        tmp_path: Path) -> None:
    root = tmp_path / "skills"
    for name, extra in (("polars", ""), ("hidden", "disable-model-invocation: true\n")):
        (root / name).mkdir(parents=True)
        (root / name / "SKILL.md").write_text(
            f"---\ndescription: DataFrames for {name}\n{extra}---\nBody.\n")
    snap = load_snapshot((SkillRoot("workspace", str(root), True),), LoadRules(), Host())
    assert [r.name for r in snap.ranker.rank("dataframes")] == ["hidden", "polars"]
    again = load_snapshot((SkillRoot("workspace", str(root), True),), LoadRules(), Host(), 2)
    assert again.ranker is not snap.ranker  # each snapshot its own, until /reload_skills


@pytest.mark.skipif(not (SHARED / "corpus").is_dir(), reason="needs ../shared/corpus")
def test_the_whole_corpus_is_ranked(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    for skill in (SHARED / "corpus").glob("*/*/SKILL.md"):
        os.symlink(skill.parent, root / f"{skill.parent.parent.name}__{skill.parent.name}")
    snap = load_snapshot((SkillRoot("workspace", str(root), True),), LoadRules(), Host())
    assert len(snap.skills) > 1000
    ranked = snap.ranker.rank("make a scatter plot with matplotlib")
    assert "matplotlib" in ranked[0].name
    assert snap.ranker.rank("make a scatter plot with matplotlib") == ranked


@pytest.mark.skipif(not (SHARED / "corpus").is_dir(), reason="needs ../shared/corpus")
def test_the_ranker_benchmark_prints_both_parts_beside_its_baseline() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "benchmarks/skill_ranker.py"], cwd=REPO,
                          capture_output=True, text=True, timeout=600, check=True)
    for line in ("tune: 85 requests", "heldout: 84 requests", "Lily ranker", "plain BM25",
                 "per request: median"):
        assert line in done.stdout, done.stdout


def test_a_small_snapshot_weighs_words_as_a_workspace_would() -> None:
    """Among two skills plain BM25 gives every word ~0 weight (no word is rare); blank
    skills pad the index, so the one skill about walruses clearly matches."""
    from lily_kernel.skills import RELEVANT_SCORE

    ranker = SkillRanker([Doc("walruses", "Huge manual of walruses", body="All about them."),
                          Doc("other", "Other", body="Something else entirely.")])
    (best,) = ranker.rank("tell me about walruses")
    assert best.name == "walruses" and best.score >= RELEVANT_SCORE
    assert ranker.rank("lilyfillerword") == []  # the padding never matches
