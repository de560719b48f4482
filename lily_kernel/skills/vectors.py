"""Sentence vectors of skills and requests for the ranker; skills' kept on disk.

A skill's vector encodes what it says it is for and what its SKILL.md talks about: its
name (the parts as words), its description (or summary), its `when_to_use`, then its
SKILL.md's prose (code blocks left out), as much as the encoder reads (256 tokens).
Chosen on the routing eval set's tuning part (docs/skills.md): the description alone
was right less often.

Encoding 1,000 skills takes two minutes of one core, so each vector is kept in one
SQLite file (Lily's home, `cache/skill-vectors.sqlite`), keyed by the sha256 of the
encoder's version and the text: a snapshot encodes only the skills it has never seen,
whichever kernel saw them. They are encoded CHUNK at a time, each chunk kept as soon as
it is done, one chunk at a time in a process: a stopped ranking (its `stop` set) ends
after the chunk in progress and keeps what it did, and a second ranking waits at most
for that chunk, then encodes what is still missing itself. The least recently used (to
the day) are dropped past MAX_KEPT. A kept vector that is not a finite unit vector is
encoded again. A cache that cannot be read or written (another kernel holding it past
BUSY_SECONDS) only costs time; a file that is not a database, or a corrupt one, is
replaced.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from lily_kernel.skills.embedding import ENCODER_VERSION, WIDTH, Encoder, shared_encoder
from lily_kernel.skills.ranker import EncodingStopped, Rankable

if TYPE_CHECKING:
    import sqlite3

    import numpy as np

__all__ = ["CACHE_FILE", "CHUNK", "MAX_KEPT", "SkillVectors", "skill_text"]

CACHE_FILE = "skill-vectors.sqlite"
MAX_KEPT = 20_000  # vectors kept on disk (1.5 KiB each: ~30 MiB)
# Skills encoded, then kept, at once: ~3 s of one core, what a stop or a second ranking
# waits for at most.
CHUNK = 32
BUSY_SECONDS = 10.0  # how long a kernel waits for another one's hold on the cache
NORM_TOLERANCE = 1e-3  # a kept vector's length may be 1 give or take this
_PROSE_KEPT = 2_000  # characters of prose: more than the encoder's 256 tokens read
_CODE_BLOCK = re.compile(r"```.*?```", re.DOTALL)
_NAME_PART = re.compile(r"[^\W_]+")
_TABLE = ("CREATE TABLE IF NOT EXISTS vectors "
          "(key TEXT PRIMARY KEY, vector BLOB NOT NULL, used REAL NOT NULL)")
# One encoding at a time in a process: the encoder's one-thread limit on BLAS is the
# process's (threadpoolctl), and two encodings would only share the one core.
_ENCODING = threading.Lock()


def skill_text(skill: Rankable) -> str:
    """The text a skill's vector encodes."""
    about = " ".join(skill.description.split()) or skill.summary
    name = " ".join(_NAME_PART.findall(skill.name))
    prose = " ".join(_CODE_BLOCK.sub(" ", skill.body).split())[:_PROSE_KEPT]
    return " ".join(part for part in (f"{name}: {about}", skill.when_to_use, prose) if part)


def _key(text: str) -> str:
    """A skill text's key in the cache: its vector changes with the text or the encoder."""
    return hashlib.sha256(f"{ENCODER_VERSION}\n{text}".encode()).hexdigest()


class SkillVectors:
    """Vectors for one Lily home: skills' from the cache or encoded (then kept), and
    requests'. `encoded` counts the texts this object had to encode."""

    def __init__(self, cache: Path | None,
                 encoder: Callable[[], Encoder] = shared_encoder) -> None:
        self.cache = cache  # a folder; None keeps nothing
        self._encoder = encoder
        self.encoded = 0

    def skills(self, skills: Sequence[Rankable],
               stop: threading.Event | None = None) -> np.ndarray:
        """One unit row per skill, in order. Raises EncoderUnavailable, and
        EncodingStopped when `stop` is set before every skill is had (the chunks done
        are kept)."""
        import numpy as np

        encoder = self._encoder()
        texts = [skill_text(s) for s in skills]
        keys = list(map(_key, texts))
        text_of = dict(zip(keys, texts, strict=True))
        read = self._read(keys)
        cached, kept = read is not None, read or {}  # not cached: encoded, not kept
        missing = sorted(k for k in text_of if k not in kept)
        for start in range(0, len(missing), CHUNK):
            with _ENCODING:
                if stop is not None and stop.is_set():
                    raise EncodingStopped(f"stopped with {len(missing) - start:,} skills "
                                          "left to encode")
                chunk = missing[start:start + CHUNK]
                if cached:  # another ranking may have encoded them while this one waited
                    again = self._read(chunk)
                    cached, kept = again is not None, kept | (again or {})
                todo = [k for k in chunk if k not in kept]
                if not todo:
                    continue
                found = dict(zip(todo, encoder.encode([text_of[k] for k in todo]),
                                 strict=True))
                self.encoded += len(todo)
                kept |= found
                cached = cached and self._write(found)
        return np.array([kept[k] for k in keys], dtype=np.float32).reshape(len(keys), WIDTH)

    def missing(self, skills: Sequence[Rankable]) -> int:
        """How many of the skills `skills` would have to encode (not in the cache).
        Raises EncoderUnavailable: without the encoder nothing will be encoded."""
        self._encoder()
        keys = [_key(skill_text(s)) for s in skills]
        return len(set(keys) - set(self._read(keys) or {}))

    def request(self, text: str) -> np.ndarray:
        """A request's vector (never kept). Raises EncoderUnavailable."""
        encoder = self._encoder()
        with _ENCODING:
            vector: np.ndarray = encoder.encode([text])[0]
        return vector

    # --- the cache --------------------------------------------------------------------

    @contextmanager
    def _database(self) -> Iterator[sqlite3.Connection]:
        """The cache, in one transaction (kernels share it: SQLite locks it). A file that
        SQLite finds is not a database, or corrupt, is replaced; any other error (the
        file held by another kernel past BUSY_SECONDS) is raised: its rows are kept."""
        import sqlite3

        assert self.cache is not None
        self.cache.mkdir(parents=True, exist_ok=True)
        path = self.cache / CACHE_FILE
        db = sqlite3.connect(path, timeout=BUSY_SECONDS)
        try:
            try:
                db.execute(_TABLE)
            except sqlite3.DatabaseError as exc:
                # The primary code: extended ones (SQLITE_CORRUPT_INDEX…) add high bits.
                if exc.sqlite_errorcode & 0xFF not in (sqlite3.SQLITE_NOTADB,
                                                       sqlite3.SQLITE_CORRUPT):
                    raise
                db.close()
                path.unlink(missing_ok=True)  # another kernel may have replaced it first
                db = sqlite3.connect(path, timeout=BUSY_SECONDS)
                db.execute(_TABLE)
            with db:
                yield db
        finally:
            db.close()

    def _read(self, keys: list[str]) -> dict[str, np.ndarray] | None:
        """The kept vectors of these keys, those that are finite unit vectors (others
        are encoded again and overwritten); None without a cache or when it cannot be
        read."""
        import sqlite3

        import numpy as np

        if self.cache is None:
            return None
        found: dict[str, np.ndarray] = {}
        now = time.time()
        try:
            with self._database() as db:
                for start in range(0, len(keys), 500):
                    chunk = keys[start:start + 500]
                    marks = ",".join("?" * len(chunk))
                    rows = db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})",
                                      chunk).fetchall()
                    found |= {k: vector for k, v in rows if isinstance(v, bytes)
                              and len(v) == WIDTH * 4
                              and _unit(vector := np.frombuffer(v, dtype=np.float32))}
                    # Recency kept to the day: most sessions read without writing.
                    db.execute(f"UPDATE vectors SET used = ? WHERE key IN ({marks}) "
                               "AND used < ?", [now, *chunk, now - 86_400])
        except (sqlite3.Error, OSError):
            return None  # unreadable: encoded again
        return found

    def _write(self, vectors: dict[str, np.ndarray]) -> bool:
        """Keep the vectors (replacing rows of the same keys); False when they could
        not be kept."""
        import sqlite3

        if self.cache is None:
            return False
        now = time.time()
        try:
            with self._database() as db:
                db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                               [(k, v.astype("<f4").tobytes(), now) for k, v in vectors.items()])
                db.execute("DELETE FROM vectors WHERE key IN (SELECT key FROM vectors "
                           "ORDER BY used DESC, key LIMIT -1 OFFSET ?)", (MAX_KEPT,))
        except (sqlite3.Error, OSError):
            return False  # not kept: encoded again next time
        return True


def _unit(vector: np.ndarray) -> bool:
    """Whether a kept vector can be used: finite, of length 1 (as the encoder makes
    them; a damaged or foreign row is not)."""
    import numpy as np

    return bool(np.isfinite(vector).all()
                and abs(float(np.linalg.norm(vector)) - 1.0) <= NORM_TOLERANCE)
