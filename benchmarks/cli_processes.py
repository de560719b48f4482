"""Benchmark: `lily skills --json` and `lily validate` as whole processes vs skills-ref.

    .venv/bin/python benchmarks/cli_processes.py [--runs 7]

What a person waits for at the shell: interpreter start, imports and the work, over
`../shared/corpus` copied into one root of real folders (1,102 skills). The baseline is
the Agent Skills reference validator (PyPI skills-ref) as a whole process over the same
folders: its `agentskills validate` command takes one folder, so the baseline process
runs its validator (`skills_ref.validator.validate`) over every folder. `lily skills
--json` runs twice: with `LILY_TRUST=workspace` (nothing digested), and with the
workspace trusted by the person's store (every skill folder digested, from the digests
kept by stat after the first run). The commands alternate; medians over --runs, and
the median of each round's ratio (skills-ref's time over Lily's in the same round, which
holds when the shared machine's speed drifts), by wall clock and by CPU time (user + system
of the finished process, the system's own accounting: on a loaded machine, the wall clock
measures the wait for a core as much as the command). Target: Lily >= 4x faster (issue 35: with
the person's trust store in use).
Also printed: one folder each (`lily validate DIR` vs `agentskills validate DIR`).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
BIN = Path(sys.executable).parent
SKILLS_REF = ("import sys, pathlib\n"
              "from skills_ref.validator import validate\n"
              "root = pathlib.Path(sys.argv[1])\n"
              "problems = [validate(p) for p in sorted(root.iterdir())]\n"
              "print(sum(1 for p in problems if p))\n")


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (user + system) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    if not CORPUS.is_dir():
        print(f"no corpus at {CORPUS}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        root = workspace / "skills"
        root.mkdir(parents=True)
        for path in sorted(CORPUS.glob("*/*/SKILL.md")):
            target = root / f"{path.parent.parent.name}__{path.parent.name}"
            target.mkdir()
            (target / "SKILL.md").write_bytes(path.read_bytes())
        empty = Path(tmp) / "empty"
        empty.mkdir()
        # Without PYTHONDONTWRITEBYTECODE (set on some CI machines): the warm-up run
        # writes Lily's .pyc files, as any machine's first run does; else every run
        # compiles the package again.
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("LILY_") and k != "PYTHONDONTWRITEBYTECODE"}
        env.update(HOME=str(empty), LILY_EVENT_LOG="0", LILY_TRUST="workspace")
        # The same workspace trusted by the person's store instead (`lily trust`): every
        # skill's folder digested at each run, from the digests kept by stat.
        lily_home = Path(tmp) / "lily-home"
        stored = {**{k: v for k, v in env.items() if k != "LILY_TRUST"},
                  "LILY_HOME": str(lily_home)}
        subprocess.run([str(BIN / "lily"), "trust", str(workspace), "--yes"], env=stored,
                       stdout=subprocess.DEVNULL, check=True)
        one = next(root.iterdir())
        skills_json = [str(BIN / "lily"), "skills", "--json", "--workspace", str(workspace),
                       "--user-dir", str(empty), "--bundled-dir", str(empty)]
        commands = {
            "lily skills --json": skills_json,
            "lily skills --json, trusted by the store": skills_json,
            "lily validate ROOT": [str(BIN / "lily"), "validate", str(root)],
            "skills-ref over ROOT": [sys.executable, "-c", SKILLS_REF, str(root)],
            "lily validate DIR": [str(BIN / "lily"), "validate", str(one)],
            "agentskills validate DIR": [str(BIN / "agentskills"), "validate", str(one)],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}

        def env_of(name: str) -> dict[str, str]:
            return stored if "store" in name else env

        for name, command in commands.items():
            timed(command, env_of(name))  # warm the page cache (and the digests kept)
        for _ in range(args.runs):
            for name, command in commands.items():
                wall, used = timed(command, env_of(name))
                times[name].append(wall)
                cpu[name].append(used)
    med = {name: statistics.median(values) for name, values in times.items()}
    for name, value in med.items():
        print(f"{name}: median {value * 1000:.0f} ms")
    for clock, measured in (("wall", times), ("cpu", cpu)):
        for name in ("lily skills --json", "lily skills --json, trusted by the store",
                     "lily validate ROOT"):
            rounds = [ref / lily for ref, lily in zip(measured["skills-ref over ROOT"],
                                                      measured[name], strict=True)]
            print(f"round by round ({clock}), skills-ref / {name}: median "
                  f"{statistics.median(rounds):.2f}x, min {min(rounds):.2f}x, "
                  f"max {max(rounds):.2f}x (target >= 4x)")
    ref = med["skills-ref over ROOT"]
    print(f"ratio skills-ref / lily skills --json: {ref / med['lily skills --json']:.1f}x "
          "(target >= 4x)")
    trusted = med["lily skills --json, trusted by the store"]
    print(f"ratio skills-ref / lily skills --json, trusted by the store: {ref / trusted:.1f}x "
          "(target >= 4x)")
    print(f"ratio skills-ref / lily validate: {ref / med['lily validate ROOT']:.1f}x "
          "(target >= 4x)")
    print(f"one folder: agentskills / lily validate: "
          f"{med['agentskills validate DIR'] / med['lily validate DIR']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
