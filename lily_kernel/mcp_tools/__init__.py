"""MCP servers' tools for Lily's model: which servers (`servers.py`), one connection by
the official SDK (`connection.py`), its tools on the one tool seam (`tools.py`), and the
session's servers started, listed and ended (`session.py`)."""

from lily_kernel.mcp_tools.servers import McpServer, configured_servers

__all__ = ["McpServer", "configured_servers"]
