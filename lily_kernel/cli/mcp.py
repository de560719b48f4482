"""`lily mcp [--workspace DIR] [--http [--host H] [--port P]]`: serve the workspace's
skills and Lily's tools over stdio, or over Streamable HTTP at `/mcp`
(lily_kernel/mcp_server/), e.g. `claude mcp add lily -- lily mcp --workspace .`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from lily_kernel.errors import UsageError

__all__ = ["add_mcp_parser"]

# Where `--http` listens unless told: loopback only (another address is reachable from
# the network, and said so at start); a port no common tool takes by default.
_HOST, _PORT = "127.0.0.1", 8765


def _cmd_mcp(args: argparse.Namespace) -> int:
    import asyncio

    from lily_kernel.mcp_server.app import serve

    workspace = Path(args.workspace)
    if not workspace.is_dir():
        raise UsageError(f"--workspace {args.workspace}: not a folder.")
    if not args.http and (args.host is not None or args.port is not None):
        raise UsageError("--host and --port are for --http (stdio needs neither).")
    endpoint = None
    if args.http:
        from lily_kernel.mcp_server.http import bind_endpoint

        port = _PORT if args.port is None else args.port
        if not 0 <= port <= 65535:
            raise UsageError(f"--port {port}: not a port (0 to 65535; 0: any free one).")
        endpoint = bind_endpoint(args.host or _HOST, port, os.environ)
    asyncio.run(serve(workspace.resolve(), endpoint))
    return 0


def add_mcp_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = sub.add_parser("mcp", help="serve the workspace's skills and Lily's tools (MCP, "
                         "stdio or --http)")
    mcp.add_argument("--workspace", default=".", help="the workspace folder (default: .)")
    mcp.add_argument("--http", action="store_true",
                     help="serve Streamable HTTP at /mcp instead of stdio; every request "
                     "needs the bearer token (LILY_MCP_TOKEN, or one made and printed at "
                     "start)")
    mcp.add_argument("--host", default=None,
                     help=f"the address --http listens on (default: {_HOST}; another is "
                     "reachable from the network)")
    mcp.add_argument("--port", type=int, default=None,
                     help=f"the port --http listens on (default: {_PORT}; 0: any free one)")
    mcp.set_defaults(func=_cmd_mcp)
