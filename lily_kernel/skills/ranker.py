"""Rank a snapshot's skills against a request: lexical relevance and, when the encoder
is installed, meaning; deterministic, no chat model.

BM25 as SQLite's FTS5 computes it (`bm25()`, in the standard library's sqlite3): one
in-memory table per snapshot, one row per skill, four columns weighted apart: the
skill's name (its `-`/`_` parts as words), its one-line summary (or description), its
`when_to_use`, and, lightly, its SKILL.md body (what the skill talks about: requests
rarely use the description's words, measured in docs/skills.md). FTS5's `porter`
tokenizer splits on anything but letters and digits (`scikit-learn` is `scikit` and
`learn`) and stems English (`plots`, `plotting` match `plot`). The request's words are
looked up one by one (any of them may match); everyday words ("the", "what", "how")
are left out of the query, so a request made only of them matches nothing.

Given vectors (skills/vectors.py: the `local` extra's sentence encoder), each skill's
score is ln(1 + its lexical score) + SEMANTIC_WEIGHT * the cosine of its vector and the
request's, so that "whats the temp in toronto rn" finds `weather`, which shares no word
with it. Without them (the encoder not installed, or its files refused: `lexical_only`
says why), the lexical score alone. Both are relevant from RELEVANT_SCORE (chosen on the
eval set's tuning part, docs/skills.md). Scores are rounded to 6 decimals and ties
broken by name: the same snapshot and request always give the same ranking.

The skills' vectors are had on the first ranking by meaning, outside the ranker's lock:
encoding many takes minutes, a chunk at a time, and a ranking's caller may stop it
between chunks (its `stop` event; the ranking then raises EncodingStopped). Another
ranking meanwhile waits for no more than the chunk in progress.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from lily_kernel.skills.models import SkillSnapshot

__all__ = ["RELEVANT_SCORE", "SEMANTIC_WEIGHT", "STOP_WORDS", "EncodingStopped", "Meaning",
           "Rankable", "Ranked", "SkillIndex", "SkillRanker", "query_words"]


# Column weights of bm25(): the name counts most, then the summary and when_to_use, the
# body least (chosen on the eval set's tuning part, docs/skills.md).
NAME_WEIGHT, SUMMARY_WEIGHT, WHEN_WEIGHT, BODY_WEIGHT = 3.0, 1.0, 1.0, 0.1
# BM25 weighs a word by its rarity among the skills (its IDF); among two or three skills
# no word is rare and every score is near 0. A small snapshot is indexed with blank
# skills up to this many (each column as long as the real ones on average, of a word no
# request looks up), so a word of one skill in five weighs as it would in a workspace.
MIN_POPULATION = 50
_FILLER = "lilyfillerword"
# A best match scoring below this is no match: the request needs no skill (measured on
# the eval set's tuning part, docs/skills.md). Scores are BM25's divided by ln(1 + the
# number of skills), the most a word's rarity (its IDF) can weigh: raw BM25 grows with
# the number of skills, and one threshold must serve 5 skills and 1,000.
RELEVANT_SCORE = 1.0
# With vectors, a cosine's weight beside ln(1 + the lexical score) (the tuning part's
# best, and its neighbours' within a request: docs/skills.md).
SEMANTIC_WEIGHT = 2.3
MAX_STEMS_KEPT = 50_000  # words whose stems a ranker remembers
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Words that say nothing about which skill a request needs (English function words and
# the politeness of requests). Measured on the eval set's tuning part (docs/skills.md).
_STOP_TEXT = """
a about above after again against all am an and any are as at be because
been before being below between both but by can could did do does doing down during
each few for from further had has have having he her here hers herself him himself
his how i if in into is it its itself just let lets me more most
my myself no nor not now of off on once only or other our ours ourselves
out over own please same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we
were what when where which while who whom why will with would you your yours yourself
yourselves im ive id youre dont doesnt cant wont isnt thanks thank hi hey hello ok
okay yes want need like get got make help tell give show one two also really
something anything thing things way
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())


def query_words(text: str) -> list[str]:
    """The request's words that are looked up: lower-case, each once, in order, without
    the stop words."""
    words = (w.lower() for w in _WORD.findall(text))
    return list(dict.fromkeys(w for w in words if w not in STOP_WORDS))


@dataclass(frozen=True, slots=True)
class Ranked:
    """One skill's relevance to a request: higher is more relevant, 0 is none."""

    name: str
    score: float


class Rankable(Protocol):
    """What the ranker reads of a skill (skills/models.py's `Skill`)."""

    @property
    def name(self) -> str: ...

    @property
    def summary(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def when_to_use(self) -> str: ...

    @property
    def body(self) -> str: ...


class EncodingStopped(Exception):  # noqa: N818 (what happened, asked for: not a fault)
    """A ranking's caller stopped it (its `stop` event) while skills were encoded; the
    chunks done are kept."""


class Meaning(Protocol):
    """Sentence vectors of skills and requests, unit rows (skills/vectors.py's
    `SkillVectors`); both raise EncoderUnavailable when they cannot be had, and the
    skills' EncodingStopped once `stop` is set, between chunks."""

    def skills(self, skills: Sequence[Rankable], stop: threading.Event | None = None
               ) -> Any: ...

    def missing(self, skills: Sequence[Rankable]) -> int: ...

    def request(self, text: str) -> Any: ...


def _name_text(name: str) -> str:
    return " ".join(_WORD.findall(name))


class SkillRanker:
    """The skills of one snapshot; indexed (and, with vectors, encoded) on the first
    `rank`, never at kernel start, and kept beside the snapshot (`SkillIndex`) until the
    next `/reload_skills`."""

    def __init__(self, skills: Sequence[Rankable]) -> None:
        self._skills = skills
        # One index, built once, used from any thread (never held while encoding).
        self._lock = threading.Lock()
        self._db: Any = None
        self._stems: dict[str, str] = {}  # word -> its stem, as FTS5's tokenizer makes it
        self._meaning: Meaning | None = None
        self._vectors: Any = None  # the skills' vectors, one row each, on first use
        self.lexical_only: str | None = "no sentence vectors were given"

    @property
    def ranked_by(self) -> str:
        """How it ranks, as reports say it (known for sure after the first ranking)."""
        return ("words and meaning" if self.lexical_only is None
                else f"words only ({self.lexical_only})")

    def use_meaning(self, meaning: Meaning) -> None:
        """Rank by meaning too, with these vectors (the skills' are had on first use)."""
        with self._lock:
            self._meaning, self._vectors, self.lexical_only = meaning, None, None

    def unencoded(self) -> int:
        """How many skills the first ranking by meaning will encode (0 once the vectors
        are had, or without meaning): a slow first ranking can be said beforehand."""
        from lily_kernel.skills.embedding import EncoderUnavailable

        meaning = self._meaning
        if meaning is None or self._vectors is not None:
            return 0
        try:
            return meaning.missing(self._skills)
        except EncoderUnavailable:
            return 0  # the ranking says why, and goes on by words

    def _database(self) -> Any:
        """The index, built on first use (call it holding the lock)."""
        if self._db is None:
            self._db = self._index()
        return self._db

    def _index(self) -> Any:
        import sqlite3  # with the first ranking, not at kernel start

        db = sqlite3.connect(":memory:", check_same_thread=False)
        db.execute("CREATE VIRTUAL TABLE skills USING fts5("
                   "name, summary, when_to_use, body, tokenize='porter unicode61')")
        # A request's words, one a row, and their stems: words of one stem count once.
        db.execute("CREATE VIRTUAL TABLE words USING fts5(word, tokenize='porter unicode61')")
        db.execute("CREATE VIRTUAL TABLE stems USING fts5vocab(words, 'instance')")
        rows = [(_name_text(s.name), _about(s), s.when_to_use, s.body) for s in self._skills]
        if 0 < len(rows) < MIN_POPULATION:
            lengths = [sum(len(_WORD.findall(row[c])) for row in rows) // len(rows)
                       for c in range(4)]
            blank = tuple(" ".join([_FILLER] * n) for n in lengths)
            rows += [blank] * (MIN_POPULATION - len(rows))  # type: ignore[list-item]
        db.executemany(
            "INSERT INTO skills(rowid, name, summary, when_to_use, body) VALUES (?, ?, ?, ?, ?)",
            [(row, *columns) for row, columns in enumerate(rows, 1)])
        return db

    def words(self, text: str) -> list[str]:
        """The request's words that are looked up: `query_words`, and of several words
        with one stem (`plot`, `plots`, `plotting`) the first only."""
        with self._lock:
            return self._words(text)

    def _words(self, text: str) -> list[str]:
        words = [w for w in query_words(text) if w != _FILLER]
        if len(words) < 2:
            return words
        unknown = [w for w in words if w not in self._stems]
        if unknown:  # stemmed by FTS5 itself, once per word
            if len(self._stems) > MAX_STEMS_KEPT:
                self._stems.clear()
            db = self._database()
            db.execute("DELETE FROM words")
            db.executemany("INSERT INTO words(rowid, word) VALUES (?, ?)",
                           list(enumerate(unknown, 1)))
            for term, row in db.execute("SELECT term, doc FROM stems"):
                self._stems[unknown[row - 1]] = term
        seen: set[str] = set()
        kept = []
        for word in words:
            stem = self._stems.get(word, word)
            if stem not in seen:
                seen.add(stem)
                kept.append(word)
        return kept

    def rank(self, text: str, limit: int | None = None,
             stop: threading.Event | None = None) -> list[Ranked]:
        """The skills relevant to the request, most relevant first (ties by name); at most
        `limit` of them. Lexically, those that match any of its words; with vectors, all
        that score above 0. Raises EncodingStopped when `stop` is set while the skills
        are encoded."""
        with self._lock:
            lexical = self._lexical(text)
        cosines = self._cosines(text, stop)
        if cosines is None:
            scores = {row: round(score, 6) for row, score in lexical.items()}
        else:
            scores = {row: score for row, cosine in enumerate(cosines.tolist())
                      if (score := round(math.log1p(lexical.get(row, 0.0))
                                         + SEMANTIC_WEIGHT * cosine, 6)) > 0}
        ranked = sorted((Ranked(self._skills[row].name, score) for row, score in scores.items()),
                        key=lambda r: (-r.score, r.name))
        return ranked[:limit] if limit is not None else ranked

    def _lexical(self, text: str) -> dict[int, float]:
        """Each matching skill's (0-based row) BM25 score, scaled (call it holding the
        lock)."""
        words = self._words(text)
        if not words:
            return {}
        query = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        found = self._database().execute(
            "SELECT rowid, bm25(skills, ?, ?, ?, ?) FROM skills WHERE skills MATCH ?",
            (NAME_WEIGHT, SUMMARY_WEIGHT, WHEN_WEIGHT, BODY_WEIGHT, query)).fetchall()
        scale = math.log(1 + max(len(self._skills), MIN_POPULATION))
        return {row - 1: -score / scale for row, score in found if row <= len(self._skills)}

    def _cosines(self, text: str, stop: threading.Event | None) -> Any:
        """Each skill's cosine with the request, or None without vectors (call it without
        the lock: two rankings may encode at once, and share the chunks). The skills'
        vectors are had once; a failure is said once, in `lexical_only` and the log, and
        the ranker goes on with words alone."""
        from lily_kernel.skills.embedding import EncoderRefused, EncoderUnavailable

        meaning, vectors = self._meaning, self._vectors
        if meaning is None or not self._skills:
            return None
        try:
            if vectors is None:
                vectors = meaning.skills(self._skills, stop)
                with self._lock:
                    if self._meaning is meaning:  # not given other vectors meanwhile
                        self._vectors = vectors
            return vectors @ meaning.request(text)
        except EncoderUnavailable as exc:
            with self._lock:
                told = self._meaning is not meaning  # another ranking said it already
                if not told:
                    self._meaning, self.lexical_only = None, str(exc)
            if not told:
                import logging  # only when this happens: not on `lily skills`' path

                logging.getLogger("lily_kernel").log(
                    logging.WARNING if isinstance(exc, EncoderRefused) else logging.INFO,
                    "skills are ranked by their words only: %s", exc)
            return None

    def best(self, text: str) -> Ranked | None:
        """The most relevant skill, if it scores at least RELEVANT_SCORE (else the request
        is taken to need none)."""
        ranked = self.rank(text, limit=1)
        return ranked[0] if ranked and ranked[0].score >= RELEVANT_SCORE else None


class SkillIndex:
    """The ranker of the snapshot in use, kept beside it by the snapshot's owner (the
    session): one per snapshot, made (and indexed) by the first ranking of that snapshot
    and kept until a ranking of the next one replaces it. The snapshot stays a plain
    value. Each ranker made ranks by `meaning` too, when given (the environment gives the
    skills' sentence vectors)."""

    def __init__(self, meaning: Meaning | None = None) -> None:
        self._meaning = meaning
        self._lock = threading.Lock()  # rankings run in worker threads
        self._kept: tuple[SkillSnapshot, SkillRanker] | None = None
        self._held: tuple[SkillSnapshot, SkillRanker] | None = None

    def use_meaning(self, meaning: Meaning) -> None:
        """The rankers made from now on (the next snapshot's) rank by this meaning too."""
        with self._lock:
            self._meaning = meaning

    def ranker(self, snapshot: SkillSnapshot) -> SkillRanker:
        """The ranker of this very snapshot (made now if the one kept is another's)."""
        with self._lock:
            if self._kept is None or self._kept[0] is not snapshot:
                self._kept = (snapshot, self._made(snapshot.skills))
            return self._kept[1]

    def held_ranker(self, snapshot: SkillSnapshot) -> SkillRanker:
        """The ranker of this snapshot's held skills, an index of their own (nothing held
        weighs in the ranking the model's shortlist comes from): `/skills <words>`."""
        with self._lock:
            if self._held is None or self._held[0] is not snapshot:
                self._held = (snapshot, self._made(snapshot.held))
            return self._held[1]

    def _made(self, skills: Sequence[Rankable]) -> SkillRanker:
        ranker = SkillRanker(skills)
        if self._meaning is not None:
            ranker.use_meaning(self._meaning)
        return ranker


def _about(skill: Rankable) -> str:
    """What a skill says it is for: its summary, and its description when that adds to it
    (the description is the Agent Skills standard's trigger text)."""
    summary, description = skill.summary, " ".join(skill.description.split())
    return summary if not description or description in summary else f"{summary} {description}"
