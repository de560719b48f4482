"""Run one tool call through Lily's real gate (runtime/tool_gate.py), outside a session:
for tests of the tools layer, which assert on what the model would read."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from lily_kernel.events import Caller, EventLog
from lily_kernel.prompting import tool_result_text
from lily_kernel.runtime.sink import SilentSink
from lily_kernel.runtime.tool_gate import ToolGate
from lily_kernel.tools import ToolContext, ToolPolicy, ToolRegistry


@dataclass(frozen=True)
class Called:
    """A call's outcome as the tests read it: let through or not, failed or not, and
    what the model reads of it."""

    allowed: bool
    error: bool
    output: str


def run_tool(registry: ToolRegistry, policy: ToolPolicy, name: str, arguments: dict[str, Any],
             ctx: ToolContext, caller: Caller) -> Called:
    gate = ToolGate(registry, policy, ctx, EventLog(None, "test"))
    outcome = asyncio.run(gate.run(SilentSink(), name, arguments, caller, skill=ctx.skill))
    return Called(outcome.allowed, outcome.status != "ran",
                  tool_result_text(outcome.status, outcome.text))
