"""Skills' sentence vectors (skills/vectors.py): what is encoded, and the cache on disk."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lily_kernel.skills import vectors as vectors_module
from lily_kernel.skills.embedding import WIDTH, find_encoder_files
from lily_kernel.skills.vectors import CACHE_FILE, SkillVectors, skill_text
from tests.core.test_ranker import Doc  # the ranker's stand-in for a Skill

INSTALLED = find_encoder_files() is not None




class CountingEncoder:
    """A stand-in encoder: a unit vector drawn from each text's digest; it records the
    texts it was asked to encode."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def encode(self, texts: Sequence[str]) -> Any:
        self.texts += texts
        rows = [np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16))
                .standard_normal(WIDTH) for t in texts]
        return np.array([r / np.linalg.norm(r) for r in rows], dtype=np.float32)


def store(cache: Path | None, encoder: CountingEncoder) -> SkillVectors:
    return SkillVectors(cache, encoder=lambda: encoder)  # type: ignore[arg-type,return-value]


def test_a_skill_is_encoded_from_its_name_description_when_to_use_and_prose() -> None:
    text = skill_text(Doc("scikit-learn", summary="ML.", when_to_use="when training",
                          description="Machine  learning\nin Python.",
                          body="# Intro\nFit models.\n```python\nimport sklearn\n```\nThen predict."))
    assert text == ("scikit learn: Machine learning in Python. when training "
                    "# Intro Fit models. Then predict.")
    assert skill_text(Doc("bare", summary="Only a summary.")) == "bare: Only a summary."


def test_vectors_are_kept_and_a_second_snapshot_encodes_only_what_changed(
        tmp_path: Path) -> None:
    skills = [Doc("a", "Alpha."), Doc("b", "Beta."), Doc("c", "Gamma.")]
    encoder = CountingEncoder()
    first = store(tmp_path, encoder).skills(skills)
    assert first.shape == (3, WIDTH) and len(encoder.texts) == 3
    again = store(tmp_path, encoder)  # another session, the same Lily home
    assert (again.skills(skills) == first).all()
    assert again.encoded == 0 and len(encoder.texts) == 3
    changed = [skills[0], Doc("b", "Beta, edited."), skills[2]]
    assert (again.skills(changed)[[0, 2]] == first[[0, 2]]).all()
    assert encoder.texts[3:] == ["b: Beta, edited."] and again.encoded == 1


def test_missing_counts_what_a_ranking_would_encode_without_encoding(tmp_path: Path) -> None:
    skills = [Doc("a", "Alpha."), Doc("b", "Beta.")]
    encoder = CountingEncoder()
    vectors = store(tmp_path, encoder)
    assert vectors.missing(skills) == 2 and encoder.texts == []
    vectors.skills(skills[:1])
    assert vectors.missing(skills) == 1 and vectors.missing([*skills, skills[0]]) == 1


def test_without_a_cache_every_snapshot_encodes_again() -> None:
    encoder = CountingEncoder()
    for _ in range(2):
        store(None, encoder).skills([Doc("a", "Alpha.")])
    assert len(encoder.texts) == 2


def test_the_cache_keeps_at_most_max_kept_vectors_the_least_recently_used_go(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors_module, "MAX_KEPT", 3)
    encoder = CountingEncoder()
    vectors = store(tmp_path, encoder)
    for name in "abcde":
        vectors.skills([Doc(name, f"Skill {name}.")])
    with sqlite3.connect(tmp_path / CACHE_FILE) as db:
        (count,) = db.execute("SELECT count(*) FROM vectors").fetchone()
    assert count == 3
    vectors.skills([Doc("e", "Skill e.")])
    assert vectors.encoded == 5  # e was kept
    vectors.skills([Doc("a", "Skill a.")])
    assert vectors.encoded == 6  # a was not


def test_a_broken_cache_file_is_replaced(tmp_path: Path) -> None:
    (tmp_path / CACHE_FILE).write_bytes(b"not a database at all, " * 100)
    encoder = CountingEncoder()
    store(tmp_path, encoder).skills([Doc("a", "Alpha.")])
    again = store(tmp_path, encoder)
    again.skills([Doc("a", "Alpha.")])
    assert again.encoded == 0


def test_a_cache_that_cannot_be_written_only_costs_time(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    encoder = CountingEncoder()
    vectors = store(tmp_path / "file" / "cache", encoder)  # under a file: no folder
    assert vectors.skills([Doc("a", "Alpha.")]).shape == (1, WIDTH)
    assert vectors.skills([Doc("a", "Alpha.")]).shape == (1, WIDTH)
    assert vectors.encoded == 2


@pytest.mark.skipif(not INSTALLED, reason="the `local` extra's encoder is not installed")
@pytest.mark.embedded
def test_the_real_encoder_vectors_come_back_from_the_cache_bit_for_bit(tmp_path: Path) -> None:
    skills = [Doc("weather", "Current weather and forecasts for a city."),
              Doc("haiku", "Write a haiku.")]
    first = SkillVectors(tmp_path)
    vectors = first.skills(skills)
    again = SkillVectors(tmp_path)
    assert (again.skills(skills) == vectors).all() and again.encoded == 0
    assert again.request("rain in Oslo?").shape == (WIDTH,)
