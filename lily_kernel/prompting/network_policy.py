"""The one line a client inside the sandbox reads (and the model with its output) when the
session's network policy refuses a host (network/policy.py, network/asking.py decide;
the proxy puts the line in its refusal). Refusals for what a connection is rather than
its host are worded in network_refusals.py."""

from __future__ import annotations

__all__ = ["declined_host", "denied_host", "local_address", "network_refusals_text",
           "not_allowed_host", "refused_under_auto", "unanswered_host"]

_BLOCKED = "blocked by Lily's network policy"
_ADD = "ask the person or add it to network.allow"


def not_allowed_host(host: str) -> str:
    """A host nobody named, and nobody answered for (the common case)."""
    return f"{_BLOCKED}: {host} (not allowed; {_ADD})"


def unanswered_host(host: str, nobody: str) -> str:
    """A host nobody named, where no one can be asked (`nobody`: why not)."""
    return f"{_BLOCKED}: {host} (not allowed; {_ADD}; no one could be asked: {nobody})"


def denied_host(host: str, entry: str) -> str:
    """A host `network.deny` names (`entry`: the entry that names it)."""
    return f"{_BLOCKED}: {host} (network.deny names it: {entry})"


def declined_host(host: str) -> str:
    """The person said no to this host for the run in progress."""
    return f"{_BLOCKED}: {host} (the person declined it for this run)"


def local_address(host: str, kind: str) -> str:
    """An address of this machine or its network that no entry names exactly."""
    return (f"{_BLOCKED}: {host} (a {kind} address: refused unless network.allow names "
            "it exactly, with its port)")


def refused_under_auto(host: str) -> str:
    """Full auto opens no host that nobody named."""
    return (f"{_BLOCKED}: {host} (not allowed: full auto opens no host that network.allow "
            "does not name; add it to network.allow)")


def network_refusals_text(text: str, refused: list[str]) -> str:
    """A run's result with the connections refused during it, one line each, so the
    model reads why (a client's own message is often only `403 Forbidden`); a line the
    output already holds (curl prints the proxy's) is not said twice."""
    unsaid = [line for line in refused if line not in text]
    if not unsaid:
        return text
    return "\n".join([text.rstrip("\n"), *unsaid] if text.strip() else unsaid)
