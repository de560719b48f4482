"""`lily mcp`: the workspace's skills and Lily's tools served over stdio, or over
Streamable HTTP (`--http`, mcp_server/http.py) (MCP).

A thin edge beside the kernel adapter and the CLI: the session is the runtime's (one
`LilyRuntime` for the workspace: its snapshot, its policy and trust, its event log under
`.lily/sessions/`), the skills extension and the transport are fastmcp's, the calls
the gate's. Nothing is decided here. What could not be served is said on stderr (stdout
is the protocol's). The session ends with the server: its Python kernel and the MCP
servers it started are closed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from lily_kernel.runtime.runtime import LilyRuntime

if TYPE_CHECKING:
    from lily_kernel.mcp_server.http import HttpEndpoint

__all__ = ["serve"]

MAX_LINES = 10  # skills not served, said one a line on stderr
INSTRUCTIONS = ("Lily's skills for this workspace (the MCP skills extension: skills/list, "
                "skills/get, skill:// resources) and Lily's tools under the workspace's "
                "policy: a tool Lily asks the person about is refused here, with how to "
                "allow it.")


async def serve(workspace: Path, http: HttpEndpoint | None = None) -> None:
    """Serve until the client closes stdin, or (`http`, its socket bound) until
    interrupted. One session either way: its policy, its trust, its log."""
    from fastmcp import FastMCP

    from lily_kernel.mcp_server.skills import SnapshotSkills, skill_manifests
    from lily_kernel.mcp_server.tools import served_tools

    # The token is one more credential of the session's environment: redacted from the
    # log and from what a tool's result says, as an API key is.
    environ = None if http is None else {**os.environ, "LILY_MCP_TOKEN": http.token}
    runtime = LilyRuntime.start(workspace, environ)
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
        if http is None:
            await server.run_stdio_async(show_banner=False, log_level="WARNING")
        else:
            from lily_kernel.mcp_server.http import serve_http

            await serve_http(server, http)
    finally:
        if http is not None:
            http.sock.close()
        runtime.close()
