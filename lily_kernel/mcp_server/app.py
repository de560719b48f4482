"""`lily mcp`: the workspace's skills and Lily's tools served over stdio (MCP).

A thin edge beside the kernel adapter and the CLI: the session is the runtime's (one
`LilyRuntime` for the workspace: its snapshot, its policy and trust, its event log under
`.lily/sessions/`), the skills extension and the transport are fastmcp's, the calls
the gate's. Nothing is decided here. What could not be served is said on stderr (stdout
is the protocol's). The session ends with the server: its Python kernel and the MCP
servers it started are closed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from lily_kernel.runtime.runtime import LilyRuntime

__all__ = ["serve"]

MAX_LINES = 10  # skills not served, said one a line on stderr
INSTRUCTIONS = ("Lily's skills for this workspace (the MCP skills extension: skills/list, "
                "skills/get, skill:// resources) and Lily's tools under the workspace's "
                "policy: a tool Lily asks the person about is refused here, with how to "
                "allow it.")


async def serve(workspace: Path) -> None:
    """Serve until the client closes stdin."""
    from fastmcp import FastMCP

    from lily_kernel.mcp_server.skills import SnapshotSkills, skill_manifests
    from lily_kernel.mcp_server.tools import served_tools

    runtime = LilyRuntime.start(workspace)
    try:
        snapshot = runtime.session.skill_snapshot
        manifests, left_out = skill_manifests(snapshot)
        for line in left_out[:MAX_LINES]:
            print(f"lily mcp: {line}", file=sys.stderr)
        if len(left_out) > MAX_LINES:
            print(f"lily mcp: and {len(left_out) - MAX_LINES} more skills not served",
                  file=sys.stderr)
        folders = {s.name: Path(s.path).parent for s in snapshot.skills}
        server = FastMCP("lily", instructions=INSTRUCTIONS)
        server.add_provider(SnapshotSkills(manifests, folders))
        for tool in served_tools(runtime.gate):
            server.add_tool(tool)
        await server.run_stdio_async(show_banner=False, log_level="WARNING")
    finally:
        runtime.close()
