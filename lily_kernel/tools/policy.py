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

from lily_kernel.errors import ToolError
from lily_kernel.tools.registry import Tool, ToolContext, ToolRegistry
from lily_kernel.validation import ShapeError

__all__ = [
    "Caller",
    "Decision",
    "ToolOutcome",
    "ToolPolicy",
    "allowed_tool_names",
    "check_call",
    "run_checked",
    "run_tool",
]

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

    def model_tools(
        self, registry: ToolRegistry, narrowed: frozenset[str] | None = None,
        skill_active: bool = False,
    ) -> list[Tool]:
        """Tools the model is offered: allowed, not owner-only, and (when a skill's
        `allowed-tools` narrows them) named in `narrowed` (lower-case names); the
        skill's own tools only while a skill is active."""
        return [
            tool
            for tool in registry
            if self.allows(tool.name)
            and not tool.owner_only
            and (skill_active or not tool.needs_skill)
            and (narrowed is None or _kept(tool, narrowed))
        ]

    def refusal(self, tool: Tool | None, name: str, caller: Caller,
                offered: Iterable[str] | None = None) -> str | None:
        """Why a call must not run, or None when it may."""
        if tool is None:
            return f"unknown tool '{name}'"
        if not self.allows(name):
            return f"tool '{name}' is not allowed by the tool policy"
        if caller == "model" and tool.owner_only:
            return f"tool '{name}' is owner-only: only the person can run it, with a command"
        if caller == "model" and offered is not None and name not in set(offered):
            if tool.needs_skill:
                return (f"tool '{name}' works only while a skill is active (and its "
                        "allowed-tools permit it)")
            return f"tool '{name}' is not available while the active skill narrows the tools"
        return None


def _kept(tool: Tool, narrowed: frozenset[str]) -> bool:
    if tool.kept_by is None:
        return True
    return tool.name.lower() in narrowed or bool(tool.kept_by & narrowed)


def allowed_tool_names(registry: ToolRegistry, policy: ToolPolicy) -> frozenset[str]:
    """Registered tools the policy allows (what `requires_tools` is checked against)."""
    return frozenset(name for name in registry.names() if policy.allows(name))


@dataclass(frozen=True)
class ToolOutcome:
    """The result of one attempted call, ran or refused, for the log and the model."""

    name: str
    allowed: bool
    output: str  # what the model is told
    error: bool = False
    detail: str = ""  # the bare reason of a refusal or failure, for people

    @classmethod
    def refused(cls, name: str, reason: str) -> ToolOutcome:
        """A call that must not run; the one wording of a refusal, for the model and
        for people (`allowed` False is how everyone tells a refusal)."""
        return cls(name, allowed=False, output=f"Refused: {reason}.", error=True,
                   detail=f"refused: {reason}.")

    @classmethod
    def failed(cls, name: str, error: ToolError) -> ToolOutcome:
        """A call that ran and failed (the handler's ToolError)."""
        return cls(name, allowed=True, output=f"Error: {error}", error=True,
                   detail=str(error))


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
        return ToolOutcome.refused(name, refusal or "")
    try:
        return tool, tool.parse_arguments(arguments)
    except ShapeError as exc:
        detail = f"bad arguments: {exc.key}: {exc.problem}."
        return ToolOutcome(name, allowed=True, output=f"Error: {detail}", error=True,
                           detail=detail)


def run_tool(
    registry: ToolRegistry,
    policy: ToolPolicy,
    name: str,
    arguments: dict[str, Any],
    context: ToolContext,
    caller: Caller,
    offered: Iterable[str] | None = None,
) -> ToolOutcome:
    """The one gate: check policy, validate arguments, run the handler."""
    checked = check_call(registry, policy, name, arguments, caller, offered)
    if isinstance(checked, ToolOutcome):
        return checked
    return run_checked(*checked, context)


def run_checked(tool: Tool, args: Any, context: ToolContext) -> ToolOutcome:
    """Run the handler of a call check_call let through."""
    try:
        return ToolOutcome(tool.name, allowed=True, output=tool.handler(args, context))
    except ToolError as exc:
        return ToolOutcome.failed(tool.name, exc)
