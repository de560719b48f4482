"""Where a connection may go: a destination's host read from a request, its name resolved
once (`Resolver`, the seam tests replace), and each address it resolved to checked.

The proxy refuses an address that reaches this machine or its network rather than the
internet (`refused_kind`): loopback (the Jupyter server, the kernel's own ports, a local
model server), link-local (cloud metadata, 169.254.169.254), private and unique-local,
shared (CGNAT), multicast, unspecified, reserved and documentation ranges; and an IPv6
address that embeds one of those (IPv4-mapped, 6to4, Teredo, NAT64). It then connects to
exactly the address it checked, never to the name again (no DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable

__all__ = ["Resolver", "is_address", "normal_host", "parse_authority", "refused_kind",
           "resolve_host"]

# A name as a client may ask for it: letters, digits, '-', '_' and dots (IDNs come
# encoded); anything else (a space, '@', '/', '%') is not a host.
_NAME = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_](?:[a-z0-9_-]{0,62}))*")
_METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")

Resolver = Callable[[str, int], list[str]]
"""A host and port to the addresses it resolves to, in the order to try them (raises
OSError when it resolves to none)."""


def resolve_host(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to (the system's resolver, once), duplicates
    dropped."""
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in found))


def parse_authority(authority: str, default_port: int | None = None) -> tuple[str, int]:
    """`host:port` (or `[v6]:port`, or a bare host with `default_port`) as a host
    (lower-case, no trailing dot, no brackets) and a port. Raises ValueError."""
    text = authority.strip()
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or not isinstance(ipaddress.ip_address(text[1:end]), ipaddress.IPv6Address):
            raise ValueError("not an IPv6 address in brackets")
        host, rest = text[1:end], text[end + 1:]
    elif ":" in text:
        host, port_text = text.rsplit(":", 1)
        rest = ":" + port_text
    else:
        host, rest = text, ""
    if rest:
        if not rest.startswith(":") or not rest[1:].isdigit() or len(rest) > 6:
            raise ValueError(f"not a port: {rest[1:]!r}")
        port = int(rest[1:])
    elif default_port is not None:
        port = default_port
    else:
        raise ValueError("no port")
    if not 0 < port < 65536:
        raise ValueError(f"port {port} out of range")
    return normal_host(host), port


def normal_host(host: str) -> str:
    """`host` lower-cased without its trailing dot; ValueError when it is neither a name
    nor an address."""
    host = host.lower().removesuffix(".")
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    if len(host) > 253 or not _NAME.fullmatch(host):
        raise ValueError(f"not a host name: {host[:80]!r}")
    return host


def is_address(host: str) -> bool:
    """Whether `host` is an address itself (nothing to resolve)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _embedded(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, Teredo's client, NAT64)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


# The kinds a host name that network.allow names itself may resolve to (Verdict.named):
# a private network's (a company's package mirror), never this machine's own or its
# cloud's (loopback, link-local, metadata: only an exact address entry opens those).
NAMED_MAY_REACH = frozenset({"private", "non-public"})


def refused_kind(address: str) -> str | None:
    """Why the proxy does not connect to `address` unless the policy named the host
    exactly: its kind ("loopback", "cloud metadata", …), or None for an address on
    the internet."""
    try:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(
            address.split("%")[0])
    except ValueError:
        return "unreadable"
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded(ip)
        if inner is not None:
            return refused_kind(str(inner)) or None
    checks = (
        (ip in _METADATA, "cloud metadata"),
        (ip.is_unspecified, "unspecified"),
        (ip.is_loopback, "loopback"),
        (ip.is_link_local, "link-local"),
        (ip.is_multicast, "multicast"),
        (ip.is_private, "private"),
        (not ip.is_global, "non-public"),
    )
    return next((kind for hit, kind in checks if hit), None)
