"""The session's MCP servers, for the runtime: started before a turn (and by `/mcp`),
their tools taken up by the policy at once.

What each server is and how it is reached is mcp_tools/'s; here the session's
workspace is read again over the registry the servers' tools joined, so that every
policy rule (tools.allow/ask/deny naming them, the untrusted folder's holds, asked by
default) applies to them as to Lily's own tools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lily_kernel.display import Notice
from lily_kernel.display.notices import mcp_server_failed
from lily_kernel.runtime.core import RuntimeCore
from lily_kernel.runtime.sink import CellSink

if TYPE_CHECKING:
    from lily_kernel.mcp_tools.session import McpOverview

__all__ = ["mcp_overview", "start_mcp_servers"]


# How long `/mcp` waits for servers to start: it answers then, one still starting listed
# so (a server that never answers would hold it for as long as it lives, up to its
# time limit); a chat turn waits for each, within its time limit.
OVERVIEW_WAIT = 5.0


async def start_mcp_servers(runtime: RuntimeCore, sink: CellSink,
                            wait: float | None = None) -> None:
    """Start the configured servers not started yet (`wait`: for at most so long, see
    McpServers.start); with new tools, the workspace (its policy) read again over them
    and taken up."""
    env = runtime.env
    if not env.mcp_servers:
        return  # nothing configured: nothing of the SDK is imported
    def failed(name: str, error: str | None) -> None:
        sink.show(Notice(mcp_server_failed(name, error)))

    if await runtime.services.mcp.start(env.mcp_servers, env.registry, runtime.log.emit, failed,
                                        wait):
        runtime.take_up(env.reread())


async def mcp_overview(runtime: RuntimeCore, sink: CellSink) -> McpOverview:
    """`/mcp`: the servers started (if they were not), then each one's state and tools,
    with the policy in force."""
    from lily_kernel.mcp_tools.servers import held_servers
    from lily_kernel.mcp_tools.session import McpOverview

    await start_mcp_servers(runtime, sink, OVERVIEW_WAIT)
    env = runtime.env
    held = held_servers(env.workspace, env.mcp_servers)
    return McpOverview(runtime.services.mcp.statuses(env.mcp_servers, held),
                       env.policy.under(runtime.state.policy), env.registry)
