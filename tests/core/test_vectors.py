"""Skills' sentence vectors (skills/vectors.py): what is encoded, and the cache on disk."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lily_kernel.skills import SkillRanker
from lily_kernel.skills import vectors as vectors_module
from lily_kernel.skills.embedding import ENCODER_VERSION, WIDTH, find_encoder_files
from lily_kernel.skills.ranker import EncodingStopped, Ranked
from lily_kernel.skills.vectors import CACHE_FILE, CHUNK, SkillVectors, skill_text
from tests.core.test_ranker import Doc  # the ranker's stand-in for a Skill

INSTALLED = find_encoder_files() is not None


class CountingEncoder:
    """A stand-in encoder: a unit vector drawn from each text's digest; it records the
    texts it was asked to encode, and how many at each call."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.batches: list[int] = []

    def encode(self, texts: Sequence[str]) -> Any:
        self.texts += texts
        self.batches.append(len(texts))
        rows = [np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16))
                .standard_normal(WIDTH) for t in texts]
        return np.array([r / np.linalg.norm(r) for r in rows], dtype=np.float32)


class GatedEncoder(CountingEncoder):
    """A CountingEncoder whose every call waits until the test opens the gate for it
    (`gate.release()`, once a call); `started` is released as each call begins, and
    `threads` names the thread of each call."""

    def __init__(self) -> None:
        super().__init__()
        self.gate, self.started = threading.Semaphore(0), threading.Semaphore(0)
        self.threads: list[str] = []

    def encode(self, texts: Sequence[str]) -> Any:
        self.threads.append(threading.current_thread().name)
        self.started.release()
        assert self.gate.acquire(timeout=10), "the test never opened the gate"
        return super().encode(texts)


def store(cache: Path | None, encoder: CountingEncoder) -> SkillVectors:
    return SkillVectors(cache, encoder=lambda: encoder)  # type: ignore[arg-type,return-value]


def rows(cache: Path) -> dict[str, np.ndarray]:
    """The cache's rows, read by a connection of the test's own."""
    with closing(sqlite3.connect(cache / CACHE_FILE)) as db:
        return {k: np.frombuffer(v, dtype=np.float32)
                for k, v in db.execute("SELECT key, vector FROM vectors")}


def numbered(count: int) -> list[Doc]:
    return [Doc(f"skill{i:03d}", f"Skill number {i}.") for i in range(count)]


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


def test_skills_are_encoded_a_chunk_at_a_time_each_kept_as_it_is_done(tmp_path: Path) -> None:
    seen: list[int] = []  # the rows kept when each chunk began

    class Watching(CountingEncoder):
        def encode(self, texts: Sequence[str]) -> Any:
            seen.append(len(rows(tmp_path)))
            return super().encode(texts)

    encoder = Watching()
    vectors = store(tmp_path, encoder).skills(numbered(2 * CHUNK + 6))
    assert encoder.batches == [CHUNK, CHUNK, 6]
    assert seen == [0, CHUNK, 2 * CHUNK]  # a restart halfway keeps the chunks done
    assert vectors.shape == (2 * CHUNK + 6, WIDTH) and len(rows(tmp_path)) == 2 * CHUNK + 6


def test_a_stop_between_chunks_ends_the_encoding_and_keeps_the_chunks_done(
        tmp_path: Path) -> None:
    stop = threading.Event()

    class StoppedDuringTheSecondChunk(CountingEncoder):
        def encode(self, texts: Sequence[str]) -> Any:
            if len(self.batches) == 1:
                stop.set()  # the person presses stop while the second chunk is encoded
            return super().encode(texts)

    skills = numbered(3 * CHUNK)
    encoder = StoppedDuringTheSecondChunk()
    with pytest.raises(EncodingStopped):
        store(tmp_path, encoder).skills(skills, stop)
    assert encoder.batches == [CHUNK, CHUNK]  # the chunk in progress ends, no other starts
    assert len(rows(tmp_path)) == 2 * CHUNK
    restarted = store(tmp_path, CountingEncoder())  # the next ranking, or a new kernel
    assert restarted.missing(skills) == CHUNK
    assert restarted.skills(skills).shape == (3 * CHUNK, WIDTH)
    assert restarted.encoded == CHUNK


class Ranking(threading.Thread):
    """One `rank` in a thread of its own: its result, or what it raised."""

    def __init__(self, ranker: SkillRanker, text: str, stop: threading.Event | None = None,
                 ) -> None:
        super().__init__(daemon=True)
        self.ranker, self.text, self.stop = ranker, text, stop
        self.result: list[Ranked] | None = None
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.result = self.ranker.rank(self.text, stop=self.stop)
        except BaseException as exc:  # noqa: BLE001 (the test reads it)
            self.error = exc


def answered_at_once(call: Callable[[], Any]) -> Any:
    """What `call` returns, asserting it returned within ten seconds (in another thread;
    what it must not wait for is held until the test releases it, never by a clock)."""
    answer: list[Any] = []
    thread = threading.Thread(target=lambda: answer.append(call()), daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert answer, "it waited (for the ranker's lock?)"
    return answer[0]


def test_a_ranking_waits_for_another_ones_chunk_in_progress_not_for_its_whole_batch(
        tmp_path: Path) -> None:
    encoder = GatedEncoder()
    ranker = SkillRanker(numbered(3 * CHUNK))
    ranker.use_meaning(store(tmp_path, encoder))
    stop = threading.Event()
    first = Ranking(ranker, "skill number one", stop)
    try:
        assert encoder.started.acquire(timeout=5)  # its first chunk is being encoded
        # Meanwhile the ranker's lock is free: the words, and what is left to encode.
        assert answered_at_once(lambda: ranker.words("skill number")) == ["skill", "number"]
        assert answered_at_once(ranker.unencoded) == 3 * CHUNK
        stop.set()  # the first ranking's cell is stopped
        second = Ranking(ranker, "skill number two")
    finally:
        for _ in range(4):  # the first chunk; the second ranking's two and its request
            encoder.gate.release()
    first.join(timeout=10)
    second.join(timeout=10)
    assert isinstance(first.error, EncodingStopped)
    assert second.error is None and second.result is not None and len(second.result) > 0
    # The second ranking encoded the rest itself, nothing twice.
    assert encoder.threads == [first.name, second.name, second.name, second.name]
    assert encoder.batches == [CHUNK, CHUNK, CHUNK, 1]
    assert len(set(encoder.texts[:-1])) == 3 * CHUNK and encoder.texts[-1] == "skill number two"
    assert ranker.unencoded() == 0


def test_a_locked_cache_is_not_used_and_neither_deleted_nor_emptied(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors_module, "BUSY_SECONDS", 0.2)
    store(tmp_path, CountingEncoder()).skills([Doc("a", "Alpha."), Doc("b", "Beta.")])
    kept = rows(tmp_path)
    holder = sqlite3.connect(tmp_path / CACHE_FILE, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")  # another kernel writing, for longer than we wait
        encoder = CountingEncoder()
        vectors = store(tmp_path, encoder)
        got = vectors.skills([Doc("a", "Alpha."), Doc("c", "Gamma.")])
        assert got.shape == (2, WIDTH) and vectors.encoded == 2  # encoded, not read
        assert (tmp_path / CACHE_FILE).exists()
        holder.execute("INSERT INTO vectors VALUES ('theirs', ?, 0)",
                       (np.eye(1, WIDTH, dtype="<f4").tobytes(),))
        holder.execute("COMMIT")
    finally:
        holder.close()
    after = rows(tmp_path)
    assert after.keys() == kept.keys() | {"theirs"}  # the other writer's row too
    assert all((after[k] == v).all() for k, v in kept.items())


def test_kept_vectors_that_are_not_finite_unit_vectors_are_encoded_again(
        tmp_path: Path) -> None:
    skills = [Doc("a", "Alpha."), Doc("b", "Beta."), Doc("c", "Gamma.")]
    first = store(tmp_path, CountingEncoder()).skills(skills)
    damaged = {"a": np.full(WIDTH, np.nan, dtype="<f4"), "b": first[1] * 2}  # NaN, inflated
    keys = {d.name: hashlib.sha256(f"{ENCODER_VERSION}\n{skill_text(d)}"
                                   .encode()).hexdigest() for d in skills}
    with closing(sqlite3.connect(tmp_path / CACHE_FILE)) as db, db:
        for name, vector in damaged.items():
            db.execute("UPDATE vectors SET vector = ? WHERE key = ?",
                       (vector.astype("<f4").tobytes(), keys[name]))
    encoder = CountingEncoder()
    again = store(tmp_path, encoder)
    assert again.missing(skills) == 2
    vectors = again.skills(skills)
    assert encoder.texts == [skill_text(skills[0]), skill_text(skills[1])]
    assert (vectors == first).all()
    kept = rows(tmp_path)
    assert all((kept[keys[d.name]] == first[i]).all() for i, d in enumerate(skills))
