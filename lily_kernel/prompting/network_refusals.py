"""The one line a client inside the sandbox reads (and shows the model) when Lily's proxy
refuses a connection for what it is rather than for its host (the policy words those):
an address on this machine or its network, a malformed or slow request, too many at
once, a host that cannot be reached. The proxy puts the line in the refusal's status
line, a header and its body (network/proxy.py)."""

from __future__ import annotations

__all__ = ["address_refused", "bad_request", "no_network", "not_resolved", "too_many",
           "too_slow", "unreachable"]


def no_network(host: str) -> str:
    """Nothing decides for this session: every host is refused."""
    return (f"blocked by Lily's network policy: {host} (not allowed; ask the person or add "
            "it to network.allow)")


def address_refused(host: str, address: str, kind: str, *, by_name: bool) -> str:
    """`by_name`: naming the host itself in network.allow opens an address of this kind."""
    if by_name:
        how = f"refused unless network.allow names {host} itself (no wildcard)"
    else:
        how = "refused unless network.allow names the address exactly, with its port"
    return (f"blocked by Lily's network policy: {host} resolves to {address}, a {kind} "
            f"address ({how})")


def not_resolved(host: str, why: str) -> str:
    return f"Lily's proxy could not resolve {host} ({why})"


def unreachable(host: str, port: int, why: str) -> str:
    return f"Lily's proxy could not connect to {host} port {port} ({why})"


def bad_request(why: str) -> str:
    return f"Lily's proxy refused a malformed request ({why})"


def too_many(limit: int) -> str:
    return (f"Lily's proxy already holds {limit} connections, its limit; try again when "
            "some have ended")


def too_slow(seconds: float) -> str:
    return f"Lily's proxy waited {seconds:g} s for the request's headers"
