"""`lily mcp [--workspace DIR]`: serve the workspace's skills and Lily's tools over stdio
(lily_kernel/mcp_server/), e.g. `claude mcp add lily -- lily mcp --workspace .`."""

from __future__ import annotations

import argparse
from pathlib import Path

from lily_kernel.errors import UsageError

__all__ = ["add_mcp_parser"]


def _cmd_mcp(args: argparse.Namespace) -> int:
    import asyncio

    from lily_kernel.mcp_server.app import serve

    workspace = Path(args.workspace)
    if not workspace.is_dir():
        raise UsageError(f"--workspace {args.workspace}: not a folder.")
    asyncio.run(serve(workspace.resolve()))
    return 0


def add_mcp_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = sub.add_parser("mcp", help="serve the workspace's skills and Lily's tools (MCP, "
                         "stdio)")
    mcp.add_argument("--workspace", default=".", help="the workspace folder (default: .)")
    mcp.set_defaults(func=_cmd_mcp)
