"""Sentence vectors of skills and requests for the ranker; skills' kept on disk.

A skill's vector encodes what it says it is for and what its SKILL.md talks about: its
name (the parts as words), its description (or summary), its `when_to_use`, then its
SKILL.md's prose (code blocks left out), as much as the encoder reads (256 tokens).
Chosen on the routing eval set's tuning part (docs/skills.md): the description alone
was right less often.

Encoding 1,000 skills takes a minute on two cores, so each vector is kept in one SQLite
file (Lily's home, `cache/skill-vectors.sqlite`), keyed by the sha256 of the encoder's
version and the text: a snapshot encodes only the skills it has never seen, whichever
kernel saw them. The least recently used (to the day) are dropped past MAX_KEPT. A
cache that cannot be read or written only costs time.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from lily_kernel.skills.embedding import ENCODER_VERSION, WIDTH, Encoder, shared_encoder
from lily_kernel.skills.ranker import Rankable

if TYPE_CHECKING:
    import sqlite3

    import numpy as np

__all__ = ["CACHE_FILE", "MAX_KEPT", "SkillVectors", "skill_text"]

CACHE_FILE = "skill-vectors.sqlite"
MAX_KEPT = 20_000  # vectors kept on disk (1.5 KiB each: ~30 MiB)
_PROSE_KEPT = 2_000  # characters of prose: more than the encoder's 256 tokens read
_CODE_BLOCK = re.compile(r"```.*?```", re.DOTALL)
_NAME_PART = re.compile(r"[^\W_]+")
_TABLE = ("CREATE TABLE IF NOT EXISTS vectors "
          "(key TEXT PRIMARY KEY, vector BLOB NOT NULL, used REAL NOT NULL)")


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

    def skills(self, skills: Sequence[Rankable]) -> np.ndarray:
        """One unit row per skill, in order. Raises EncoderUnavailable."""
        import numpy as np

        encoder = self._encoder()
        texts = [skill_text(s) for s in skills]
        keys = list(map(_key, texts))
        kept = self._read(keys)
        missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in kept}.items())
        if missing:
            fresh = encoder.encode([t for _, t in missing])
            self.encoded += len(missing)
            found = {k: fresh[i] for i, (k, _) in enumerate(missing)}
            self._write(found)
            kept |= found
        return np.array([kept[k] for k in keys], dtype=np.float32).reshape(len(keys), WIDTH)

    def missing(self, skills: Sequence[Rankable]) -> int:
        """How many of the skills `skills` would have to encode (not in the cache)."""
        keys = [_key(skill_text(s)) for s in skills]
        return len(set(keys) - set(self._read(keys)))

    def request(self, text: str) -> np.ndarray:
        """A request's vector (never kept). Raises EncoderUnavailable."""
        vector: np.ndarray = self._encoder().encode([text])[0]
        return vector

    # --- the cache --------------------------------------------------------------------

    @contextmanager
    def _database(self) -> Iterator[sqlite3.Connection]:
        """The cache, in one transaction (kernels share it: SQLite locks it)."""
        import sqlite3

        assert self.cache is not None
        self.cache.mkdir(parents=True, exist_ok=True)
        path = self.cache / CACHE_FILE
        db = sqlite3.connect(path, timeout=10)
        try:
            try:
                db.execute(_TABLE)
            except sqlite3.DatabaseError:  # not a database (a broken file): start anew
                db.close()
                path.unlink()
                db = sqlite3.connect(path, timeout=10)
                db.execute(_TABLE)
            with db:
                yield db
        finally:
            db.close()

    def _read(self, keys: list[str]) -> dict[str, np.ndarray]:
        import sqlite3

        import numpy as np

        found: dict[str, np.ndarray] = {}
        if self.cache is None:
            return found
        now = time.time()
        try:
            with self._database() as db:
                for start in range(0, len(keys), 500):
                    chunk = keys[start:start + 500]
                    marks = ",".join("?" * len(chunk))
                    rows = db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})",
                                      chunk).fetchall()
                    found |= {k: np.frombuffer(v, dtype=np.float32) for k, v in rows
                              if isinstance(v, bytes) and len(v) == WIDTH * 4}
                    # Recency kept to the day: most sessions read without writing.
                    db.execute(f"UPDATE vectors SET used = ? WHERE key IN ({marks}) "
                               "AND used < ?", [now, *chunk, now - 86_400])
        except (sqlite3.Error, OSError):
            pass  # unreadable: encoded again
        return found

    def _write(self, vectors: dict[str, np.ndarray]) -> None:
        import sqlite3

        if self.cache is None:
            return
        now = time.time()
        try:
            with self._database() as db:
                db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                               [(k, v.astype("<f4").tobytes(), now) for k, v in vectors.items()])
                db.execute("DELETE FROM vectors WHERE key IN (SELECT key FROM vectors "
                           "ORDER BY used DESC, key LIMIT -1 OFFSET ?)", (MAX_KEPT,))
        except (sqlite3.Error, OSError):
            pass  # not kept: encoded again next time
