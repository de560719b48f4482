"""How `network.allow` and `network.deny` name hosts: `HostPattern`, read once by
`parse_host_pattern` (config.py checks every entry with it; network/policy.py matches a
connection's destination against the patterns).

An entry is a host name (`pypi.org`: that host only), `*.` and a domain
(`*.example.com`: its subdomains, not the domain itself), `*` (any host), or an address
(`10.0.0.5`, `[::1]`); each with an optional `:port` (without one, any port). Names are
lower-case without a trailing dot (an IDN is written in its ASCII form or converted to
it); addresses compare as addresses (`::0001` is `::1`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ANY_HOST", "HostPattern", "bad_host_entry", "parse_host_pattern"]

ANY_HOST = "*"
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
# What an entry is when it is not one (said in the error).
EXPECTED = ("a host name (pypi.org), *.domain (*.example.com), * or an address "
            "(127.0.0.1, [::1]), with an optional :port")


@dataclass(frozen=True)
class HostPattern:
    """One entry: `host` is the name, the domain after `*.` (`subdomains`), `*`, or the
    address (normalised); `port` None is any port."""

    host: str
    port: int | None = None
    subdomains: bool = False
    address: bool = False

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        host = f"*.{host}" if self.subdomains else host
        return host if self.port is None else f"{host}:{self.port}"

    def matches(self, host: str, port: int) -> bool:
        """Whether a destination (a host as the proxy normalised it, and its port) is
        one this entry names."""
        if self.port is not None and port != self.port:
            return False
        if self.host == ANY_HOST:
            return True
        if self.address:
            return _address(host) == self.host
        if self.subdomains:
            return host.endswith("." + self.host)
        return host == self.host

    def names_host(self, host: str, port: int) -> bool:
        """This entry is the destination's own host name, no wildcard (`pypi.corp.example`,
        with or without a port): what lets a name reach a private address (a company's
        package mirror; network/addresses.py, `NAMED_MAY_REACH`)."""
        return not (self.address or self.subdomains or self.host == ANY_HOST) and \
            self.matches(host, port)

    def names_exactly(self, host: str, port: int) -> bool:
        """This entry is the destination's very address with its port (`127.0.0.1:8765`):
        what opens a loopback or private address (network/decisions.py, `exact`)."""
        return self.address and self.port is not None and self.matches(host, port)


def _address(text: str) -> str | None:
    import ipaddress  # (a lily.yaml naming hosts only: not on the kernel's start path)

    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def _split_port(text: str) -> tuple[str, int | None]:
    """`host:port`, `[v6]:port`, `[v6]`, a bare IPv6 address or a host, as (host, port)."""
    if text.startswith("["):
        end = text.find("]")
        rest = text[end + 1:] if end > 0 else "?"
        if rest and not rest.startswith(":"):
            raise ValueError("an address in brackets is followed by nothing or :port")
        return text[1:end], _port(rest[1:]) if rest else None
    if text.count(":") == 1:
        host, port = text.split(":")
        return host, _port(port)
    return text, None  # a bare IPv6 address, or no port


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"the port must be a number from 1 to 65535 (got {text!r})")
    return int(text)


def parse_host_pattern(entry: str) -> HostPattern:
    """One entry of `network.allow` or `network.deny` read; ValueError saying what is
    wrong with it."""
    text = entry.strip().lower()
    if not text or any(c.isspace() or c in "/@?#" for c in text):
        raise ValueError(f"{entry!r} is not a host: expected {EXPECTED}")
    host, port = _split_port(text)
    host = host.removesuffix(".") if host != "*." else host
    if (address := _address(host)) is not None:
        return HostPattern(address, port, address=True)
    if host == ANY_HOST:
        return HostPattern(ANY_HOST, port)
    subdomains = host.startswith("*.")
    name = host.removeprefix("*.")
    if not name.isascii():
        try:
            name = name.encode("idna").decode("ascii")
        except UnicodeError:
            raise ValueError(f"{entry!r} is not a host name") from None
    if len(name) > 253 or not _NAME.fullmatch(name):
        raise ValueError(f"{entry!r} is not a host: expected {EXPECTED}")
    return HostPattern(name, port, subdomains=subdomains)


def bad_host_entry(entries: tuple[str, ...]) -> str | None:
    """What is wrong with the first entry that names no hosts, or None (config.py)."""
    for entry in entries:
        try:
            parse_host_pattern(entry)
        except ValueError as exc:
            return str(exc)
    return None
