"""How MCP servers' tools are named on the tool seam: `mcp__<server>__<tool>`, Claude
Code's spelling, so a skill's `allowed-tools` and a policy written for Claude Code name
the same tools here. A whole server is `mcp__<server>` (or `mcp__<server>__*`).

Case: as every tool name in a policy, these compare case-insensitively: the prefix
(`MCP__github`) and the server's name (`mcp__github` names the server `GitHub`; two
servers whose names differ only in case are one configuration error, mcp_tools/servers.py).
"""

from __future__ import annotations

__all__ = ["TOOL_PREFIX", "server_entry", "server_of", "tool_name"]

TOOL_PREFIX = "mcp__"


def tool_name(server: str, tool: str) -> str:
    return f"{TOOL_PREFIX}{server}__{tool}"


def server_of(name: str) -> str | None:
    """The server a tool name (`mcp__github__create_issue`) or a whole server's entry
    (`mcp__github`, `mcp__github__*`) names, as written; None for any other name."""
    if name[:len(TOOL_PREFIX)].lower() != TOOL_PREFIX:
        return None
    return name[len(TOOL_PREFIX):].split("__", 1)[0] or None


def server_entry(name: str) -> bool:
    """Whether `name` stands for every tool of a server (`mcp__github`, `mcp__github__*`)."""
    server = server_of(name)
    return server is not None and name[len(TOOL_PREFIX) + len(server):] in ("", "__*")
