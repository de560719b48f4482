"""The floor `lily mcp`'s start is measured against (benchmarks/mcp_start.py): a minimal
MCP server on the same SDK (fastmcp, on the official `mcp`) and transport (stdio),
serving the same skill folders through fastmcp's own skills provider, and one trivial
tool.

    python benchmarks/mcp_floor_server.py [SKILLS_ROOT]

Without SKILLS_ROOT it serves the tool and an empty skills catalog: the SDK's own
start, the barest floor.
Every folder holding a SKILL.md below SKILLS_ROOT is read by `Skill.from_directory`
(its files read and hashed, as `lily mcp` does); the first of a name wins, and a folder
fastmcp refuses (its frontmatter's name not its folder's, no description, …) is left out.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from fastmcp import FastMCP
from fastmcp.skills import Skill
from fastmcp.skills.provider import SkillCatalogProvider


def load(root: Path) -> list[Skill]:
    skills: dict[str, Skill] = {}
    for found in sorted(root.rglob("SKILL.md")):
        try:
            skill = Skill.from_directory(found.parent)
        except ValueError:
            continue
        skills.setdefault(skill.name, skill)
    return list(skills.values())


def main() -> None:
    logging.getLogger("fastmcp").setLevel(logging.WARNING)  # as `lily mcp` runs it
    server = FastMCP("floor")
    skills = load(Path(sys.argv[1])) if len(sys.argv) > 1 else []
    server.add_provider(SkillCatalogProvider(skills))

    @server.tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    server.run(transport="stdio", show_banner=False, log_level="WARNING")


if __name__ == "__main__":
    main()
