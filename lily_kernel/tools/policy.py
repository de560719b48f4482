"""The tool policy: which tools may run, for whom, and the one gate every call passes.

`allow` (a list or `*`), `ask` and `deny` come from config. Deny wins, then ask, then
allow; an `explicit` tool (running a skill's script) is not covered by `allow: "*"`:
only a list that names it allows it. A tool in `ask` runs only after the person said
yes to that call. The model is offered only allowed (or asked) tools that are not
`owner_only`, narrowed further by an active skill's `allowed-tools`; the person may
also run allowed owner-only tools, through a `tool_dispatch` command. Anything else is
refused and never run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from lily_kernel.tools.registry import Tool, ToolOutcome, ToolRegistry
from lily_kernel.validation import ShapeError

__all__ = ["Caller", "Decision", "ToolPolicy", "check_call"]

Caller = Literal["model", "owner"]
Decision = Literal["allow", "ask", "deny"]


@dataclass(frozen=True)
class ToolPolicy:
    """allow/ask/deny as configured; `decision` is the only place the rule is applied."""

    allow: tuple[str, ...] | Literal["*"] = "*"
    deny: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    explicit: frozenset[str] = frozenset()  # tools "*" does not cover

    def decision(self, name: str) -> Decision:
        """deny > ask > allow; an explicit tool needs its name in `allow` or `ask`."""
        if name in self.deny:  # deny wins over everything, including "*"
            return "deny"
        if name in self.ask:
            return "ask"
        if name in self.allow or (self.allow == "*" and name not in self.explicit):
            return "allow"
        return "deny"

    def allows(self, name: str) -> bool:
        """True when the tool may run (for `ask` tools: once the person agrees)."""
        return self.decision(name) != "deny"

    def decision_for(self, tool: Tool) -> Decision:
        """The decision for a registered tool: one the policy does not govern is allowed."""
        return self.decision(tool.name) if tool.governed else "allow"

    def allowed_names(self, registry: ToolRegistry) -> frozenset[str]:
        """The governed tools the policy allows (what `requires_tools` is checked against)."""
        return frozenset(t.name for t in registry if t.governed and self.allows(t.name))

    def model_tools(
        self, registry: ToolRegistry, narrowed: frozenset[str] | None = None,
        skill_active: bool = False, selecting: bool = False,
    ) -> list[Tool]:
        """Tools the model is offered: allowed, not owner-only, offered in this state
        of the request (a skill active; the model still choosing its skill) and, when a
        skill's `allowed-tools` narrows them, named in `narrowed` (lower-case names).
        The skill selection leads (`load_skill`), then the others by name."""
        offered = [
            tool
            for tool in registry
            if self.decision_for(tool) != "deny"
            and not tool.owner_only
            and _offered(tool, skill_active, selecting)
            and (narrowed is None or _kept(tool, narrowed))
        ]
        return sorted(offered, key=lambda tool: tool.offered != "while_selecting")

    def refusal(self, tool: Tool | None, name: str, caller: Caller,
                offered: Iterable[str] | None = None) -> str | None:
        """Why a call must not run, or None when it may."""
        if tool is None:
            return f"unknown tool '{name}'"
        if self.decision_for(tool) == "deny":
            return f"tool '{name}' is not allowed by the tool policy"
        if caller == "model" and tool.owner_only:
            return f"tool '{name}' is owner-only: only the person can run it, with a command"
        if caller == "model" and offered is not None and name not in set(offered):
            if tool.offered == "with_skill":
                return (f"tool '{name}' works only while a skill is active (and its "
                        "allowed-tools permit it)")
            if tool.offered == "while_selecting":
                return f"tool '{name}' is not available: the person chose the skill"
            return f"tool '{name}' is not available while the active skill narrows the tools"
        return None


def _offered(tool: Tool, skill_active: bool, selecting: bool) -> bool:
    if tool.offered == "with_skill":
        return skill_active
    if tool.offered == "while_selecting":
        return selecting
    return True


def _kept(tool: Tool, narrowed: frozenset[str]) -> bool:
    if tool.kept_by is None:
        return True
    return tool.name.lower() in narrowed or bool(tool.kept_by & narrowed)


def check_call(
    registry: ToolRegistry,
    policy: ToolPolicy,
    name: str,
    arguments: dict[str, Any],
    caller: Caller,
    offered: Iterable[str] | None = None,
) -> tuple[Tool, Any] | ToolOutcome:
    """The gate before any handler: policy, then the arguments. The tool and its
    validated arguments, or the outcome that ends the call."""
    tool = registry.get(name)
    refusal = policy.refusal(tool, name, caller, offered)
    if refusal is not None or tool is None:
        return ToolOutcome(name, "refused", refusal or "")
    try:
        return tool, tool.parse_arguments(arguments)
    except ShapeError as exc:
        return ToolOutcome(name, "failed", f"bad arguments: {exc.key}: {exc.problem}.")
