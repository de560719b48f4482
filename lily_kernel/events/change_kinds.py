"""The kinds of event of a change to the session: the person's trust answer, the policy
profile in force, an MCP server started, a connection through the session's proxy."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from lily_kernel.config import Profile
from lily_kernel.events.kinds import Answer, EventData, NetworkDecidedBy, ProfileSetBy

__all__ = ["McpServerStarted", "NetworkConnection", "PolicyChanged", "TrustDecided"]


@dataclass(frozen=True, kw_only=True)
class TrustDecided(EventData):
    """The person's answer to the trust question, and what it trusted."""

    event: ClassVar[str] = "trust_decided"
    outcome: Answer
    skills: list[str]
    settings: list[str]


@dataclass(frozen=True, kw_only=True)
class PolicyChanged(EventData):
    """The policy profile in force: logged when the session starts with `auto`, and at
    each change (`/policy`, a lily.yaml taken up once trusted)."""

    event: ClassVar[str] = "policy_profile"
    profile: Profile
    by: ProfileSetBy


@dataclass(frozen=True, kw_only=True)
class McpServerStarted(EventData):
    """An MCP server's start for the session (mcp_tools/): running, with the tools it
    offers (as Lily names them), or failed, and why."""

    event: ClassVar[str] = "mcp_server"
    server: str
    transport: str
    outcome: Literal["running", "failed"]
    tools: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class NetworkConnection(EventData):
    """One connection through the session's proxy, as it ended: where it asked to go,
    what was decided and by whom (`reason`: why it was refused, or why an allowed one
    failed), the address connected to ("" when none), the bytes sent and received, and
    the tool call (and skill) that made it, where one was running. What happened, never
    a grant: replay decides again under the policy in force."""

    event: ClassVar[str] = "network"
    host: str
    port: int
    allowed: bool
    decided_by: NetworkDecidedBy
    reason: str = ""
    address: str = ""
    bytes_sent: int = 0
    bytes_received: int = 0
    tool: str | None = None
    skill: str | None = None
