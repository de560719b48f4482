"""Benchmark: snapshot build over the corpus vs skills-ref, and /skills rendering.

    .venv/bin/python benchmarks/skills_snapshot.py [--runs 15]

1. Lily's snapshot build over `../shared/corpus` as one root (1,102 skill folders,
   copied into a temporary root: real folders, as a user's skills root would be).
2. The Agent Skills reference validator (`skills_ref.validator.validate`, PyPI
   skills-ref) over the same folders, in the same process and run.
3. Rendering `/skills` (HTML + Markdown + plain text) for 1,000 generated skills.
4. The corpus laid out as in its nine repositories (manifest.json's original paths,
   nested under one root) beside the flat copy, in the same run: what nested discovery
   costs.
Medians over --runs; targets: build < 80 ms, >= 12x faster than skills-ref, render < 20 ms.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from lily_kernel.commands import skills_result
from lily_kernel.display import render_html, render_markdown, render_plain
from lily_kernel.skills import Host, LoadRules, SkillRoot, load_snapshot
from lily_kernel.tools import ToolPolicy, default_registry

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"


def median_ms(fn: Callable[[], object], runs: int) -> float:
    fn()  # warm the page cache and imports; every timed run does the full work
    times = []
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    if not CORPUS.is_dir():
        print(f"no corpus at {CORPUS}", file=sys.stderr)
        return 1
    from skills_ref.validator import validate

    folders = sorted(p.parent for p in CORPUS.glob("*/*/SKILL.md"))
    registry = default_registry()
    rules = LoadRules(registry.names(), ToolPolicy().allowed_names(registry))
    with tempfile.TemporaryDirectory() as tmp:
        for folder in folders:
            target = Path(tmp) / f"{folder.parent.name}__{folder.name}"
            target.mkdir()
            (target / "SKILL.md").write_bytes((folder / "SKILL.md").read_bytes())
        root = (SkillRoot("workspace", tmp, True),)
        snap = load_snapshot(root, rules, Host())
        lily_ms = median_ms(lambda: load_snapshot(root, rules, Host()), args.runs)
        ref_runs = max(3, args.runs // 3)
        ref_ms = median_ms(lambda: [validate(f) for f in folders], ref_runs)

    with tempfile.TemporaryDirectory() as tmp:
        for i in range(1000):
            folder = Path(tmp) / f"skill-{i:04d}"
            folder.mkdir()
            (folder / "SKILL.md").write_text(
                f"---\nsummary: Generated skill number {i} <with> some | text\n"
                f"command: cmd{i}\n---\nBody {i}\n")
        thousand = load_snapshot((SkillRoot("workspace", tmp, True),), rules, Host())

    def render() -> None:
        result = skills_result(thousand)
        render_html(result)
        render_markdown(result)
        render_plain(result)

    render_ms = median_ms(render, args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        manifest = json.loads((CORPUS / "manifest.json").read_text())
        for repo, items in manifest.items():
            for item in items:
                target = Path(tmp) / repo.replace("/", "__") / item["original_path"]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes((CORPUS / item["corpus_path"] / "SKILL.md").read_bytes())
        nested_root = (SkillRoot("workspace", tmp, True),)
        nested = load_snapshot(nested_root, rules, Host())
        nested_ms = median_ms(lambda: load_snapshot(nested_root, rules, Host()), args.runs)
    print(f"snapshot build, corpus as one root ({len(folders)} skills, "
          f"{len(snap.skills)} available): median {lily_ms:.1f} ms  (target < 80 ms)")
    print(f"skills-ref validate, same {len(folders)} folders: median {ref_ms:.1f} ms")
    print(f"ratio skills-ref / lily: {ref_ms / lily_ms:.1f}x  (target >= 12x)")
    print(f"/skills render (html+markdown+plain), {len(thousand.skills)} skills: "
          f"median {render_ms:.1f} ms  (target < 20 ms)")
    print(f"snapshot build, corpus nested as in its repositories ({len(nested.skills)} "
          f"available): median {nested_ms:.1f} ms, {nested_ms / lily_ms:.2f}x the flat copy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
