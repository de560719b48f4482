"""A session's MCP servers: started when first needed, their tools registered, ended
with the session.

A server starts at the first chat cell (or `/mcp`) after it is configured, never before:
a workspace's servers are configured only once the workspace is trusted (environment.py),
so an untrusted one is never started or contacted. All start at once, each within its
time limit. One that fails is one line in the cell and an `mcp_server` event, and stays
failed for the session (`/mcp` says why); the others and the session go on. Tools are
registered once: the caller then makes the policy again over them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from lily_kernel.events import EventData, McpServerStarted
from lily_kernel.mcp_tools.connection import McpConnection, McpServerError, State
from lily_kernel.mcp_tools.servers import McpServer
from lily_kernel.mcp_tools.tools import server_tools
from lily_kernel.tools import ToolPolicy, ToolRegistry

__all__ = ["McpOverview", "McpServers", "ServerStatus"]


@dataclass(frozen=True)
class ServerStatus:
    """One server as `/mcp` shows it: where it is configured, what it reaches, its state
    (`held`: the workspace's, waiting for its trust), why it failed, its tools."""

    name: str
    origin: str
    target: str
    state: State | str
    error: str | None = None
    tools: tuple[tuple[str, str], ...] = ()  # (name, description)
    left_out: tuple[str, ...] = ()


@dataclass(frozen=True)
class McpOverview:
    """The servers, and the policy and tools in force once they started."""

    servers: tuple[ServerStatus, ...]
    policy: ToolPolicy
    registry: ToolRegistry


class McpServers:
    """The session's connections, by server name; one per session."""

    def __init__(self, workspace: Path, environ: Mapping[str, str]) -> None:
        self.workspace = workspace
        self.environ = environ
        self._connections: dict[str, McpConnection] = {}
        self._left_out: dict[str, tuple[str, ...]] = {}
        self._starting: dict[str, asyncio.Future[None]] = {}  # starts not finished yet

    async def start(self, servers: tuple[McpServer, ...], registry: ToolRegistry,
                    emit: Callable[[EventData], object],
                    failed: Callable[[str, str | None], None],
                    wait: float | None = None) -> bool:
        """Start the servers not started yet (all at once), register their tools; True
        when tools were added. `failed(name, error)`: a server that could not start,
        for the person. `wait`: how long to wait for the starts (None: until each ends,
        within its time limit); one still going on is `starting`, taken up by a later
        call (`/mcp` answers at once while a server that never answers lives on)."""
        for server in servers:
            if server.name not in self._connections:
                connection = McpConnection(server, self.workspace, self.environ)
                self._connections[server.name] = connection
                self._starting[server.name] = asyncio.ensure_future(connection.start())
        pending = list(self._starting.values())
        try:
            if pending:
                await asyncio.wait(pending, timeout=wait)
        except asyncio.CancelledError:  # the stop button: the starts with the cell
            for task in pending:
                task.cancel()
            raise
        added = False
        for name, task in [(n, t) for n, t in self._starting.items() if t.done()]:
            del self._starting[name]
            connection = self._connections[name]
            transport = connection.server.transport
            outcome = asyncio.CancelledError() if task.cancelled() else task.exception()
            if outcome is not None:
                if not isinstance(outcome, McpServerError):
                    raise outcome  # cancelled (the stop button), or a bug
                failed(name, connection.error)
                emit(McpServerStarted(server=name, transport=transport, outcome="failed",
                                      error=connection.error))
                continue
            tools, left_out = server_tools(connection)
            self._left_out[name] = tuple(left_out)
            for tool in tools:
                if registry.get(tool.name) is None:
                    registry.register(tool)
                    added = True
            emit(McpServerStarted(server=name, transport=transport, outcome="running",
                                  tools=[t.name for t in tools]))
        return added

    def statuses(self, servers: tuple[McpServer, ...], held: tuple[tuple[str, str], ...]
                 ) -> tuple[ServerStatus, ...]:
        """Every configured server's status, then the held ones (name, what it would
        run or reach)."""
        found = []
        for server in servers:
            connection = self._connections.get(server.name)
            state: State | str = connection.state if connection is not None else "not started"
            if server.name in self._starting:
                state = "starting"
            tools = tuple((t.name, t.description or "") for t in connection.tools) \
                if connection is not None and state == "running" else ()
            found.append(ServerStatus(
                server.name, server.origin, server.target, state,
                connection.error if connection is not None else None, tools,
                self._left_out.get(server.name, ())))
        found += [ServerStatus(name, "workspace", target, "held") for name, target in held]
        return tuple(found)

    def close(self) -> None:
        """End every server now (the kernel is shutting down or restarting)."""
        for task in self._starting.values():
            task.cancel()
        self._starting.clear()
        for connection in self._connections.values():
            connection.close()
