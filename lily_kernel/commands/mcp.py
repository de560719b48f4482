"""`/mcp`: the MCP servers this session may use, their state and their tools, with what
the policy says of each (no model involved).

The servers configured and not started yet are started first (as a chat cell would):
what their tools are is known only then. A workspace's servers held until the person
trusts it are listed as held, never started.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lily_kernel.commands.registry import CommandContext, CommandOutcome, CommandSpec
from lily_kernel.commands.results import CommandResult, ShowMcp
from lily_kernel.display import Table, Text
from lily_kernel.errors import CommandError
from lily_kernel.tools import ToolPolicy
from lily_kernel.visible import shown

if TYPE_CHECKING:
    from lily_kernel.mcp_tools.session import McpOverview

__all__ = ["mcp_command", "mcp_result"]

NONE = ("No MCP servers are configured: name them under `mcp_servers` in lily.yaml, or "
        "in `mcp.json` in the Lily home (docs/mcp.md).")
_WHY = {"policy": "tools.ask", "default": "by default", "untrusted": "folder not trusted"}
MAX_DESCRIPTION = 100


def verdict(policy: ToolPolicy, name: str) -> str:
    """What the policy says of a tool, in a few words."""
    decision = policy.decision(name)
    if decision == "ask":
        return f"asked ({_WHY[policy.why_asked(name)]})"
    return "allowed" if decision == "allow" else "denied"


async def _mcp(ctx: CommandContext, argument: str) -> CommandOutcome:
    if argument:
        raise CommandError("/mcp takes no argument.")
    if not ctx.in_cell:
        raise CommandError("/mcp runs in a notebook cell only.")
    return CommandOutcome(CommandResult("mcp", intent=ShowMcp()))


def mcp_result(overview: McpOverview) -> CommandResult:
    """`/mcp`'s result once the runtime started the servers (the `ShowMcp` intent)."""
    if not overview.servers:
        return CommandResult("mcp", "MCP servers", (Text(NONE),))
    servers = Table(("server", "configured by", "reaches", "state"), tuple(
        (s.name, "you" if s.origin == "person" else "this workspace (lily.yaml)",
         shown(s.target, 80) if s.target else "",
         "held until you trust this workspace (`/trust`)" if s.state == "held" else
         f"failed: {s.error}" if s.state == "failed" else
         "starting: no answer yet (a chat cell waits for it; `/mcp` again shows it)"
         if s.state == "starting" else s.state)
        for s in overview.servers))
    tools = tuple((f"mcp__{s.name}__{name}", verdict(overview.policy, f"mcp__{s.name}__{name}"),
                   " ".join(about.split())[:MAX_DESCRIPTION])
                  for s in overview.servers for name, about in s.tools)
    blocks = (servers, Table(("tool", "policy", "description"), tools)) if tools else (
        servers, Text("No tools: no server is running."))
    notes = tuple(line for s in overview.servers for line in s.left_out)
    return CommandResult("mcp", "MCP servers", blocks, notices=notes)


def mcp_command() -> CommandSpec:
    return CommandSpec("mcp", "the MCP servers, their state and their tools, with what the "
                       "policy says of each (starts those not started yet)", _mcp)
