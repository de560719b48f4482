"""The routing eval set (evals/routing) as the benchmarks and `lily eval` use it.

    .venv/bin/python benchmarks/routing_set.py WORKSPACE   # assemble it for `lily eval`

Assembling links each of its skills from ../shared/corpus into `WORKSPACE/skills/` (as
the manifest `workspace.json` lists them; nothing is copied) and writes the requests of
each part as `WORKSPACE/tune.json` and `WORKSPACE/heldout.json`, so that
`lily eval WORKSPACE/heldout.json --workspace WORKSPACE --runs 1` measures the held-out
part through Lily's real selection path, once the folder is trusted (`lily trust
WORKSPACE --yes`, or LILY_TRUST=workspace for the run: its skills are workspace skills).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
EVALS = REPO / "evals" / "routing"

__all__ = ["CORPUS", "EVALS", "link_skills", "requests"]


def requests(split: str | None = None) -> list[dict[str, Any]]:
    """The set's requests, all or one part's ("tune", "heldout")."""
    every: list[dict[str, Any]] = json.loads((EVALS / "requests.json").read_text())
    return [r for r in every if split is None or r["split"] == split]


def link_skills(root: Path) -> Path:
    """`root` made a skills root of the set's skills (links into the corpus)."""
    root.mkdir(parents=True, exist_ok=True)
    for skill in json.loads((EVALS / "workspace.json").read_text())["skills"]:
        os.symlink(CORPUS / skill["corpus_path"], root / skill["name"])
    return root


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    if not CORPUS.is_dir():
        print(f"routing_set: needs {CORPUS} (the shared corpus)", file=sys.stderr)
        return 2
    workspace = Path(sys.argv[1])
    link_skills(workspace / "skills")
    for split in ("tune", "heldout"):
        (workspace / f"{split}.json").write_text(json.dumps(requests(split), indent=1))
    print(f"{workspace}: {len(requests())} requests, tune.json and heldout.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
