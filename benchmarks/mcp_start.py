"""Benchmark: `lily mcp`'s start + `skills/list` against its floor, a minimal server on
the same SDK and transport serving the same skill folders (issue 38, goal <= 1.3x).

    .venv/bin/python benchmarks/mcp_start.py [--runs 7] [--skills N]

Both are whole processes over stdio, driven by the same client (fastmcp's, on the
official SDK, with the skills extension): started, initialized, every page of
`skills/list` read, closed; alternating in one run (floor, lily, floor, lily, ...);
medians. The floor is benchmarks/mcp_floor_server.py (fastmcp's own skills provider
over the workspace's skills/ folder, and one trivial tool); `lily mcp` serves the same
folder as its session's snapshot (the corpus workspace of benchmarks/mcp_serve.py:
../shared/corpus's 1,102 SKILL.md files, or N generated skills). Alongside, the bare
floor: the same server with its tool alone and no skills (the SDK's own start, what
neither can go below), to say what serving the skills costs each.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mcp_serve import REPO, environment, lily_mcp, make_workspace

FLOOR = REPO / "benchmarks" / "mcp_floor_server.py"


def floor_server(root: Path, env: dict[str, str], bare: bool = False) -> Any:
    from fastmcp.client.transports import StdioTransport

    skills = [] if bare else [str(root / "ws" / "skills")]
    return StdioTransport(sys.executable, [str(FLOOR), *skills], env=env)


async def start_and_list(transport: Any) -> tuple[float, int]:
    from fastmcp import Client
    from fastmcp.skills import SkillsClientExtension

    began = time.perf_counter()
    async with Client(transport, extensions=[SkillsClientExtension()]) as client:
        skills = await client.list_skills()
        took = time.perf_counter() - began
    return took, len(skills)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--skills", type=int, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        count = make_workspace(root, args.skills)
        env = environment(root)
        asyncio.run(start_and_list(floor_server(root, env)))  # warm: page cache, .pyc
        asyncio.run(start_and_list(lily_mcp(root, env)))
        asyncio.run(start_and_list(floor_server(root, env, bare=True)))
        floors, bares, lilys = [], [], []
        for _ in range(args.runs):
            took, floor_count = asyncio.run(start_and_list(floor_server(root, env)))
            floors.append(took)
            took, lily_count = asyncio.run(start_and_list(lily_mcp(root, env)))
            lilys.append(took)
            bares.append(asyncio.run(start_and_list(floor_server(root, env, bare=True)))[0])
        floor, lily = statistics.median(floors), statistics.median(lilys)
        bare = statistics.median(bares)
        print(f"workspace: {count} skills; served by skills/list: lily mcp {lily_count}, "
              f"the floor {floor_count}")
        for name, times in (("minimal fastmcp server, same skill folders", floors),
                            ("lily mcp", lilys), ("bare fastmcp server, no skills", bares)):
            print(f"{name}: start + skills/list median {statistics.median(times) * 1000:.0f}"
                  f" ms (min {min(times) * 1000:.0f})")
        print(f"ratio lily mcp / minimal server: {lily / floor:.2f}x (goal <= 1.3x)")
        print(f"ratio lily mcp / bare server: {lily / bare:.2f}x; the minimal server / bare: "
              f"{floor / bare:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
