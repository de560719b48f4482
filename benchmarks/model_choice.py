"""Benchmark: could the embedded model choose a request's skill better than the ranker?

    .venv/bin/python benchmarks/model_choice.py [--split tune] [--first 3]

On the routing eval set's workspace (evals/routing), for each request: the ranker's
first `--first` matches are listed for the embedded model (names and summaries after
the person's message), and the model declares one of them or none, by the same
constrained choice Lily uses; beside it, in the same run, the ranker's best match
(RELEVANT_SCORE or none). Prints how many each got right. This measurement is why, for a
model without tools, the ranker decides and the model declares only among near-equal
matches (docs/skills.md).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from routing_set import CORPUS, link_skills, requests  # noqa: E402

from lily_kernel.llm.base import ChatRequest  # noqa: E402
from lily_kernel.llm.local_files import local_model_file  # noqa: E402
from lily_kernel.llm.local_model import LocalModel  # noqa: E402
from lily_kernel.prompting.selection import (  # noqa: E402
    candidates_message,
    parse_selection,
    selection_schema,
)
from lily_kernel.skills import Host, LoadRules, SkillRanker, SkillRoot, load_snapshot  # noqa: E402
from lily_kernel.skills.embedding import find_encoder_files  # noqa: E402
from lily_kernel.skills.vectors import SkillVectors  # noqa: E402

SYSTEM = "You are Lily, a helpful assistant in a notebook."


def accepted(request: dict[str, Any]) -> set[str | None]:
    skill = request["skill"]
    return set(skill) if isinstance(skill, list) else {skill}


async def main_async(split: str, first: int) -> None:
    asked = requests(split)
    file = local_model_file("local")
    if file is None:
        raise SystemExit("model_choice: the embedded model is not installed")
    model = LocalModel(file, prefix_cache=None)
    model.load()
    with tempfile.TemporaryDirectory() as tmp:
        root = link_skills(Path(tmp) / "skills")
        snap = load_snapshot((SkillRoot("workspace", str(root), True),), LoadRules(), Host())
        ranker = SkillRanker(snap.skills)
        if find_encoder_files() is not None:  # as Lily ranks: by words and meaning
            ranker.use_meaning(SkillVectors(Path(tmp) / "cache"))
        by_model = by_ranker = 0
        for request in asked:
            listed = [r.name for r in ranker.rank(request["query"], limit=first)]
            chosen: str | None = None
            if listed:
                skills = [s for s in map(snap.get, listed) if s is not None]
                messages = [{"role": "system", "content": SYSTEM},
                            {"role": "user", "content": request["query"]},
                            candidates_message(skills)]
                response = await model.complete(
                    ChatRequest(messages, json_schema=selection_schema(tuple(listed)),
                                max_tokens=64), lambda _text: None)
                chosen = parse_selection(response.text, tuple(listed)).name
            best = ranker.best(request["query"])
            by_model += chosen in accepted(request)
            by_ranker += (best.name if best else None) in accepted(request)
    print(f"{split}: {len(asked)} requests; the model choosing among the first {first}: "
          f"{by_model} right; the ranker's best match ({ranker.ranked_by}): "
          f"{by_ranker} right")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tune", "heldout"), default="tune")
    parser.add_argument("--first", type=int, default=3)
    args = parser.parse_args()
    if not CORPUS.is_dir():
        print(f"model_choice: needs {CORPUS} (the shared corpus)", file=sys.stderr)
        return 2
    asyncio.run(main_async(args.split, args.first))
    return 0


if __name__ == "__main__":
    sys.exit(main())
