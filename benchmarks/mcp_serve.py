"""Benchmark: `lily mcp`, a whole process, against `lily skills --json` and in-process calls.

    .venv/bin/python benchmarks/mcp_serve.py [--runs 5] [--calls 200] [--skills N]

1. Start-up: `lily mcp` started, initialized and answering `skills/list` (every page) of
   the corpus workspace (../shared/corpus's 1,102 SKILL.md files, each skill in a folder
   of its own name under its repository's: skills/<repo>/<skill>/), then closed, against
   `lily skills --json` of the same workspace, both whole processes, alternating; medians.
   Goal: <= 1.5x.
2. A tool call: `read` of a small file through `lily mcp` (the SDK's client, stdio),
   against the same call in-process (the session's gate, as a kernel's model call runs
   it); medians per call. Goal: <= 10 ms over.

Without the corpus (`--skills N`, or no ../shared/corpus), N generated skills.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
sys.path.insert(0, str(REPO))


def make_workspace(root: Path, generated: int | None) -> int:
    skills = root / "ws" / "skills"
    if generated is None and CORPUS.is_dir():
        files = sorted(CORPUS.glob("*/*/SKILL.md"))
        for path in files:
            target = skills / path.parent.parent.name / path.parent.name
            target.mkdir(parents=True)
            shutil.copyfile(path, target / "SKILL.md")
        count = len(files)
    else:
        count = generated or 20
        for i in range(count):
            (skills / f"skill-{i}").mkdir(parents=True)
            (skills / f"skill-{i}" / "SKILL.md").write_text(
                f"---\nname: skill-{i}\ndescription: Skill number {i}.\n---\nBody {i}.\n")
    (root / "ws" / "note.txt").write_text("a small file\n")
    # Composio's skills need their MCP server configured (`requires: {mcp: [rube]}`);
    # neither command contacts it.
    (root / "ws" / "lily.yaml").write_text(
        "mcp_servers:\n  rube:\n    type: http\n    url: https://rube.app/mcp\n")
    (root / "empty").mkdir()
    return count


def environment(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LILY_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(HOME=str(root / "empty"), LILY_TRUST="workspace", LILY_EVENT_LOG="0",
               LILY_SKILLS_BUNDLED_DIR=str(root / "empty"), PYTHONPATH=str(REPO),
               LILY_HOME=str(root / "empty" / ".lily"))
    return env


def lily_mcp(root: Path, env: dict[str, str]) -> Any:
    from fastmcp.client.transports import StdioTransport

    return StdioTransport(sys.executable, ["-m", "lily_kernel.cli.main", "mcp",
                                           "--workspace", str(root / "ws")], env=env)


async def start_and_list(root: Path, env: dict[str, str]) -> tuple[float, int]:
    from fastmcp import Client
    from fastmcp.skills import SkillsClientExtension

    began = time.perf_counter()
    async with Client(lily_mcp(root, env), extensions=[SkillsClientExtension()]) as client:
        skills = await client.list_skills()
        took = time.perf_counter() - began
    return took, len(skills)


def skills_json(root: Path, env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "lily_kernel.cli.main", "skills", "--json",
                    "--workspace", str(root / "ws")], env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - began


async def calls_through_mcp(root: Path, env: dict[str, str], calls: int) -> list[float]:
    from fastmcp import Client

    times = []
    async with Client(lily_mcp(root, env)) as client:
        await client.call_tool("read", {"path": "note.txt"})  # the first call's imports
        for _ in range(calls):
            began = time.perf_counter()
            result = await client.call_tool("read", {"path": "note.txt"})
            times.append(time.perf_counter() - began)
            assert "a small file" in result.content[0].text
    return times


async def calls_in_process(root: Path, env: dict[str, str], calls: int) -> list[float]:
    from lily_kernel.runtime.runtime import LilyRuntime
    from lily_kernel.runtime.sink import SilentSink

    runtime = LilyRuntime.start(root / "ws", env, write_log=False)
    gate, sink, times = runtime.gate, SilentSink(), []
    try:
        await gate.run(sink, "read", {"path": "note.txt"}, "model")
        for _ in range(calls):
            began = time.perf_counter()
            outcome = await gate.run(sink, "read", {"path": "note.txt"}, "model")
            gate.redact(outcome.text)
            times.append(time.perf_counter() - began)
            assert "a small file" in outcome.text
    finally:
        runtime.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--skills", type=int, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        count = make_workspace(root, args.skills)
        env = environment(root)
        skills_json(root, env)  # warm: page cache, .pyc files
        asyncio.run(start_and_list(root, env))
        served, listed = [], []
        for _ in range(args.runs):
            listed.append(skills_json(root, env))
            took, n = asyncio.run(start_and_list(root, env))
            served.append(took)
        mcp_start, json_start = statistics.median(served), statistics.median(listed)
        print(f"workspace: {count} skills, {n} served by skills/list")
        print(f"lily skills --json: median {json_start * 1000:.0f} ms")
        print(f"lily mcp initialize + skills/list: median {mcp_start * 1000:.0f} ms")
        print(f"ratio lily mcp / lily skills --json: {mcp_start / json_start:.2f}x "
              "(goal <= 1.5x)")
        through = statistics.median(asyncio.run(calls_through_mcp(root, env, args.calls)))
        inside = statistics.median(asyncio.run(calls_in_process(root, env, args.calls)))
        print(f"read in-process (the gate): median {inside * 1000:.2f} ms")
        print(f"read through lily mcp: median {through * 1000:.2f} ms")
        print(f"over in-process: {(through - inside) * 1000:.2f} ms (goal <= 10 ms); "
              f"ratio {through / inside:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
