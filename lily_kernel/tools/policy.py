"""The tool policy: which tools may run, for whom, and the one gate every call passes.

`allow`, `ask` and `deny` come from config: lists of tool names, where `*` is every
tool. Deny wins, then ask, then allow; an `explicit` tool (running a skill's script) is
not covered by `*` in `allow` or `ask`: only a list that names it allows it. A tool in
`ask` runs only after the person said yes to that call. A tool `asked` by default
(python, shell: they run code) is covered by `*` in `allow` as asked: naming it in
`allow` lets it run unasked, and so does the profile `auto` ("full auto"), which only
the person sets (LILY_POLICY, a trusted lily.yaml, `/policy auto`). The person's answer
`a` ("always") to the question of a tool asked by default lets it run unasked for the
rest of the session (`PolicyState`); never offered for `tools.ask`, an untrusted
folder's question, or a call asked of itself. The model is offered only allowed (or
asked) tools that are not `owner_only`, narrowed further by an active skill's
`allowed-tools` and `disallowed-tools`; the person may also run allowed owner-only
tools, through a `tool_dispatch` command. Anything else is refused and never run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from lily_kernel.config import Profile, ToolsConfig
from lily_kernel.errors import ConfigError
from lily_kernel.tools.mcp_names import TOOL_PREFIX, server_entry, server_of
from lily_kernel.tools.registry import Tool, ToolOutcome, ToolRegistry
from lily_kernel.validation import ShapeError

if TYPE_CHECKING:  # (the event log stays off `lily skills`' import path)
    from lily_kernel.events import Caller

__all__ = ["AskReason", "Decision", "PolicyRefusal", "PolicyState", "Refusal", "ToolPolicy",
           "check_call", "configured_policy"]

Decision = Literal["allow", "ask", "deny"]
# Why a call is put to the person: the policy says `ask` (tools.ask); the tool is asked
# by default (python, shell); the person does not trust the folder; or the call itself
# (it would overwrite a notebook, or make a file that runs later), whatever the policy
# says.
AskReason = Literal["policy", "default", "untrusted", "call"]


class Refusal(StrEnum):
    """Why the gate refuses a call before its tool (prompting/ words it)."""

    UNKNOWN = "unknown"  # no tool of that name
    DENIED = "denied"  # the policy does not allow it
    OWNER_ONLY = "owner_only"  # only the person may run it, with a command
    NEEDS_SKILL = "needs_skill"  # a skill's own tool, and no skill is active
    NARROWED = "narrowed"  # the active skill's allowed-tools leave it out


@dataclass(frozen=True)
class PolicyRefusal:
    """A call the gate refuses: the tool's name and why."""

    name: str
    why: Refusal


@dataclass(frozen=True)
class ToolPolicy:
    """allow/ask/deny as configured; `decision` is the only place the rule is applied."""

    # Names, `*` among them for every tool ("*" alone stands for ("*",)).
    allow: tuple[str, ...] | Literal["*"] = ("*",)
    deny: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    explicit: frozenset[str] = frozenset()  # tools "*" does not allow
    # Allowed tools asked all the same because the person does not trust the folder
    # (trust/settings.py: the tools that change it).
    untrusted: frozenset[str] = frozenset()
    # Tools asked by default (`Tool.asked`) that `allow` does not name.
    asked: frozenset[str] = frozenset()
    auto: bool = False  # the profile `auto`: the `asked` tools run unasked
    approved: frozenset[str] = frozenset()  # answered "always" this session

    def decision(self, name: str) -> Decision:
        """deny > ask > allow; an explicit tool needs its name in `allow` or `ask`; an
        allowed tool in `untrusted` is asked, whatever else; then one the person
        approved for the session runs; one in `ask` is asked; one asked by default is
        asked unless the profile is `auto`."""
        if _names(self.deny, name):  # deny wins over everything, `*` in allow included
            return "deny"
        if name not in self.ask and name not in self.allow and not (
                ("*" in self.allow or "*" in self.ask) and name not in self.explicit):
            return "deny"
        if name in self.untrusted:
            return "ask"
        if name in self.approved:
            return "allow"
        if self.asks(name) or (name in self.asked and not self.auto):
            return "ask"
        return "allow"

    def asks(self, name: str) -> bool:
        """Whether `tools.ask` names the tool (by its name, or `*`)."""
        return _names(self.ask, name)

    def why_asked(self, name: str) -> AskReason:
        """Why a tool the policy asks is asked: configured so (`tools.ask`), the folder
        is not trusted, or the tool is asked by default."""
        if self.asks(name):
            return "policy"
        return "untrusted" if name in self.untrusted else "default"

    def offers_always(self, name: str) -> bool:
        """Whether the person may answer "always" (for the rest of the session) when the
        policy asks about `name` because it is asked by default: never while the folder
        is untrusted. (`tools.ask` is the person's own "ask me each time": kept.)"""
        return name in self.asked and name not in self.untrusted

    def under(self, state: PolicyState) -> ToolPolicy:
        """This policy with the person's choices of this session applied."""
        return replace(self, auto=state.profile == "auto", approved=frozenset(state.always))

    def allows(self, name: str) -> bool:
        """True when the tool may run (for `ask` tools: once the person agrees)."""
        return self.decision(name) != "deny"

    def decision_for(self, tool: Tool) -> Decision:
        """The decision for a registered tool: one the policy does not govern is allowed."""
        return self.decision(tool.name) if tool.governed else "allow"

    def allowed_names(self, registry: ToolRegistry) -> frozenset[str]:
        """The governed tools the policy allows (what `requires_tools` is checked against)."""
        return frozenset(t.name for t in registry.records()
                         if t.governed and self.allows(t.name))

    def model_tools(
        self, registry: ToolRegistry, narrowed: frozenset[str] | None = None,
        skill_active: bool = False, selecting: bool = False,
        refused: frozenset[str] = frozenset(),
    ) -> list[Tool]:
        """Tools the model is offered: allowed, not owner-only, offered in this state
        of the request (a skill active; the model still choosing its skill), when a
        skill's `allowed-tools` narrows them, named in `narrowed`, and not named in
        `refused`, its `disallowed-tools` (lower-case names both; the same names keep
        or refuse a tool). The skill selection leads (`load_skill`), then the others by
        name."""
        offered = [
            tool
            for tool in registry
            if self.decision_for(tool) != "deny"
            and not tool.owner_only
            and _offered(tool, skill_active, selecting)
            and (narrowed is None or _kept(tool, narrowed))
            and not (refused and _named(tool, refused))
        ]
        return sorted(offered, key=lambda tool: tool.offered != "while_selecting")

    def refusal(self, tool: Tool | None, caller: Caller,
                offered: Iterable[str] | None = None) -> Refusal | None:
        """Why a call must not run, or None when it may. A tool offered only while the
        model chooses its skill (`load_skill`) says itself why it is not available."""
        if tool is None:
            return Refusal.UNKNOWN
        if self.decision_for(tool) == "deny":
            return Refusal.DENIED
        if caller == "model" and tool.owner_only:
            return Refusal.OWNER_ONLY
        if caller == "model" and offered is not None and tool.name not in set(offered) \
                and tool.offered != "while_selecting":
            return Refusal.NEEDS_SKILL if tool.offered == "with_skill" else Refusal.NARROWED
        return None


@dataclass
class PolicyState:
    """What the person decided in this session over the configured policy: the profile
    (`configured` from LILY_POLICY or a trusted lily.yaml; `chosen` by `/policy`, which
    wins) and the tools answered "always". One per session, kept by the runtime."""

    configured: Profile = "ask"
    chosen: Profile | None = None
    always: set[str] = field(default_factory=set)

    @property
    def profile(self) -> Profile:
        return self.chosen or self.configured

    def update(self, configured: Profile | None = None, chosen: Profile | None = None
               ) -> bool:
        """Take a new configured or chosen profile; whether the one in force changed."""
        before = self.profile
        self.configured = configured or self.configured
        self.chosen = chosen or self.chosen
        return self.profile != before


def _names(names: tuple[str, ...] | Literal["*"], name: str) -> bool:
    """Whether a configured list names `name`: itself, or `*`, every tool."""
    return name in names or "*" in names


def _offered(tool: Tool, skill_active: bool, selecting: bool) -> bool:
    if tool.offered == "with_skill":
        return skill_active
    if tool.offered == "while_selecting":
        return selecting
    return True


def _kept(tool: Tool, narrowed: frozenset[str]) -> bool:
    return tool.kept_by is None or _named(tool, narrowed)


def _named(tool: Tool, names: frozenset[str]) -> bool:
    """Whether `allowed-tools` or `disallowed-tools` names `names` name the tool: its own
    name, or a name that stands for it (`Bash` for running a skill's script). A tool
    that narrowing never removes (`kept_by` None) is never named."""
    if tool.kept_by is None:
        return False
    return tool.name.lower() in names or bool(tool.kept_by & names)


def check_call(
    registry: ToolRegistry,
    policy: ToolPolicy,
    name: str,
    arguments: dict[str, Any],
    caller: Caller,
    offered: Iterable[str] | None = None,
) -> tuple[Tool, Any] | PolicyRefusal | ToolOutcome:
    """The checks before any handler: policy, then the arguments. The tool and its
    validated arguments; or why the call is refused; or the failure that ends it."""
    tool = registry.get(name)
    why = policy.refusal(tool, caller, offered)
    if why is not None or tool is None:
        return PolicyRefusal(name, why or Refusal.UNKNOWN)
    try:
        return tool, tool.parse_arguments(arguments)
    except ShapeError as exc:
        return ToolOutcome(name, "failed", f"bad arguments: {exc.key}: {exc.problem}.")


def _mcp_names(name: str, server: str, registry: ToolRegistry) -> tuple[str, ...]:
    """An MCP entry of `server` (its configured spelling) as the names it covers: a
    tool's own (as written past the server's name: its tools may be listed only later),
    or a whole server's entry and every tool of that server registered now (the policy
    is made again once they are: mcp_tools/)."""
    whole = f"{TOOL_PREFIX}{server}"
    if not server_entry(name):
        return (whole + name[len(whole):],)
    inside = (whole + "__").lower()
    return (whole, *(t.name for t in registry.records() if t.name.lower().startswith(inside)))


def configured_policy(config: ToolsConfig, registry: ToolRegistry,
                      mcp_servers: frozenset[str] = frozenset()) -> ToolPolicy:
    """The configured policy with tool names matched case-insensitively to the tools it
    governs; an unknown name is an error (a typo in `deny` would silently deny nothing).
    `mcp__<server>__<tool>` and `mcp__<server>` name the tools of a configured MCP server
    (`mcp_servers`), listed or not yet, its name too compared case-insensitively
    (tools/mcp_names.py)."""
    by_lower = {t.name.lower(): t.name for t in registry.records() if t.governed}
    servers = {s.lower(): s for s in mcp_servers}

    def resolve(key: str, names: tuple[str, ...]) -> tuple[str, ...]:
        found: list[str] = []
        for name in names:
            if name == "*":
                found.append(name)
            elif name.lower() in by_lower:
                found.append(by_lower[name.lower()])
            elif (server := (server_of(name) or "").lower()) in servers:
                found.extend(_mcp_names(name, servers[server], registry))
            else:
                raise ConfigError(
                    f"key 'tools.{key}' (lily.yaml or LILY_TOOLS_{key.upper()}): unknown "
                    f"tool '{name}'; the tools are: {', '.join(sorted(by_lower.values()))}"
                    + "".join(f", mcp__{s}__<tool>" for s in sorted(mcp_servers)) + ".")
        return tuple(found)

    allow = resolve("allow", tuple(config.allow))
    return ToolPolicy(allow=allow, deny=resolve("deny", tuple(config.deny)),
                      ask=resolve("ask", tuple(config.ask)),
                      explicit=frozenset(t.name for t in registry.records() if t.explicit),
                      asked=frozenset(t.name for t in registry.records()
                                      if t.asked and t.name not in allow))
