"""What the person reads about the network: the question about a host a tool call wants to
reach, the line a refused host leaves in the cell, and `/network`'s listing."""

from __future__ import annotations

from dataclasses import dataclass

from lily_kernel.display.blocks import Block, Table, Text
from lily_kernel.visible import shown

__all__ = ["NO_HOSTS", "NetworkOverview", "SeenHost", "host_blocked", "host_question"]

NO_HOSTS = "No connection has been made or refused this session."


def _where(host: str, port: int) -> str:
    return f"{shown(host)} port {port}"


def host_question(host: str, port: int, tool: str, skill: str | None,
                  files_from: tuple[str, ...] = ()) -> str:
    """A connection the policy neither allows nor denies, put to the person: who wants it,
    where to, what it could do; y (this run), N, a (this host and port, the session).
    `files_from`: the hosts a package index serves its files from, asked with it."""
    who = f"{shown(tool)}" + (f" (skill {shown(skill)})" if skill else "")
    if not files_from:
        return (f"Network: {who} wants to connect to {_where(host, port)}.\n"
                "  The code can send workspace data there.\n"
                "  (y: yes, for this tool call; a: yes, this host and port for the rest of "
                "this session)\n"
                "Allow it? [y/N/a] ")
    also = " and ".join(shown(name) for name in files_from)
    return (f"Network: {who} wants to connect to {_where(host, port)}, a package index, "
            f"and to {also}, where it keeps its files.\n"
            "  The code can send workspace data there.\n"
            "  (y: yes to these hosts, for this tool call; a: yes to these hosts on port "
            f"{port}, for the rest of this session)\n"
            "Allow it? [y/N/a] ")


def host_blocked(reason: str) -> str:
    """A refused connection, in one line (the reason the proxy gave the client)."""
    return f"Network: {reason}"


@dataclass(frozen=True)
class SeenHost:
    """A destination of this session: its last decision, who made it, its connections
    and the bytes each way."""

    host: str
    port: int
    allowed: bool
    decided_by: str
    connections: int
    bytes_sent: int
    bytes_received: int


@dataclass(frozen=True)
class NetworkOverview:
    """What `/network` shows: the configured lists (`held`: the line of a `network.allow`
    held until the folder is trusted), the profile, and the hosts of this session."""

    allow: tuple[str, ...]
    deny: tuple[str, ...]
    held: tuple[str, ...]
    auto: bool
    hosts: tuple[SeenHost, ...]

    def blocks(self) -> tuple[Block, ...]:
        rows = [("allow", ", ".join(self.allow) or "(none)"),
                ("deny", ", ".join(self.deny) or "(none)")]
        rows += [("held", f"{line} (until you trust this folder: `/trust`)")
                 for line in self.held]
        rows.append(("any other host", "refused: full auto opens no host nobody named; add "
                     "it to network.allow" if self.auto else
                     "asked in the cell (y: this tool call, a: this session)"))
        lists = Table(("network", "hosts"), tuple(rows))
        if not self.hosts:
            return lists, Text(NO_HOSTS)
        return lists, Table(
            ("host", "port", "decision", "decided by", "connections", "sent", "received"),
            tuple((h.host, str(h.port), "allowed" if h.allowed else "refused", h.decided_by,
                   str(h.connections), f"{h.bytes_sent:,} B", f"{h.bytes_received:,} B")
                  for h in self.hosts))
