"""Lily's own tools as an MCP server's tools, each call through the session's one gate.

The tools listed are those the workspace's policy offers a model (`model_tools`: denied
ones are not listed; a skill's own tools need a skill active, so they are not either).
A call runs as the model's would (caller `model`): the policy, the arguments' checks,
the `tool_call` event in the session log, the redactor. A tool the policy asks about
cannot be asked of the person through a client (MCP clients approve on their own), so
the gate finds no one to answer and refuses it, saying how to allow it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastmcp.tools import Tool as McpTool
from fastmcp.tools.base import ToolResult
from mcp_types import TextContent
from pydantic import ConfigDict, Field

from lily_kernel.runtime.sink import SilentSink
from lily_kernel.tools import Tool

if TYPE_CHECKING:
    from lily_kernel.runtime.tool_gate import ToolGate

__all__ = ["GatedTool", "served_tools"]

# Why a call Lily would ask the person about is refused here: not a notebook's runner.
_CLIENT = ("Lily serves this call to an MCP client and cannot ask the person through it "
           "(the client approves calls on its own)")


class GatedTool(McpTool):
    """One of Lily's tools; `run` hands the call to the gate."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    gate: Any = Field(exclude=True, repr=False)  # the session's ToolGate
    offered: list[str] = Field(exclude=True, repr=False)

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        gate: ToolGate = self.gate
        outcome = await gate.run(SilentSink(_CLIENT), self.name, dict(arguments), "model",
                                 offered=self.offered)
        text = outcome.text if outcome.status == "ran" else outcome.detail
        return ToolResult(content=[TextContent(type="text", text=gate.redact(text))],
                          is_error=outcome.status != "ran")


def served_tools(gate: ToolGate) -> list[GatedTool]:
    """The tools the policy offers, as the model would be offered them."""
    tools: list[Tool] = gate.policy.model_tools(gate.registry)
    names = [t.name for t in tools]
    return [GatedTool(name=t.name, description=t.description,
                      parameters=t.json_schema()["function"]["parameters"], gate=gate,
                      offered=names) for t in tools]
