"""The session's MCP servers, for the runtime: started before a turn (and by `/mcp`),
their tools taken up by the policy at once.

What each server is and how it is reached is mcp_tools/'s; here the session's
environment is read again over the registry the servers' tools joined, so that every
policy rule (tools.allow/ask/deny naming them, the untrusted folder's holds, asked by
default) applies to them as to Lily's own tools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from lily_kernel.environment import LilyEnvironment
from lily_kernel.runtime.sink import CellSink

if TYPE_CHECKING:
    from lily_kernel.events import EventLog
    from lily_kernel.mcp_tools.session import McpOverview, McpServers
    from lily_kernel.tools import PolicyState

__all__ = ["mcp_overview", "start_mcp_servers"]


class LilyRuntime(Protocol):
    """What of the runtime (runtime/runtime.py) the servers' start reads and replaces."""

    env: LilyEnvironment
    log: EventLog
    policy_state: PolicyState

    @property
    def mcp(self) -> McpServers: ...

    def use_environment(self, env: LilyEnvironment) -> None: ...


async def start_mcp_servers(runtime: LilyRuntime, sink: CellSink) -> None:
    """Start the configured servers not started yet; with new tools, the environment
    (its policy) made again over them."""
    env = runtime.env
    if not env.mcp_servers:
        return  # nothing configured: nothing of the SDK is imported
    if await runtime.mcp.start(env.mcp_servers, env.registry, runtime.log.emit, sink.notice):
        runtime.use_environment(LilyEnvironment.load(
            env.workspace, env.host.environ, registry=env.registry, host=env.host,
            trust_store=env.trust.store, commands=env.commands))


async def mcp_overview(runtime: LilyRuntime, sink: CellSink) -> McpOverview:
    """`/mcp`: the servers started (if they were not), then each one's state and tools,
    with the policy in force."""
    from lily_kernel.mcp_tools.servers import held_servers
    from lily_kernel.mcp_tools.session import McpOverview

    await start_mcp_servers(runtime, sink)
    env = runtime.env
    held = held_servers(env.workspace, env.mcp_servers)
    return McpOverview(runtime.mcp.statuses(env.mcp_servers, held),
                       env.policy.under(runtime.policy_state), env.registry)
