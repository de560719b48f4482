"""The session's host policy: `network.allow` and `network.deny` as patterns
(host_patterns.py), and what they say of a destination before anyone is asked.

Deny wins over allow; a host neither names is asked (network/asking.py), or refused
under full auto (full auto runs code unasked, it does not open hosts nobody named), or
refused at once when the client named a loopback or private address (only an exact
entry opens one: asking would change nothing). An address named exactly with its port
(`127.0.0.1:8765`) is the one way to a loopback or link-local address (`Verdict.exact`;
the proxy refuses those otherwise, names that resolve to them included). A host name
that `network.allow` names itself, no wildcard (`pypi.corp.example`), may resolve to a
private address (`Verdict.named`: a company's mirror, a network whose resolver answers
with its own gateway); a yes to a question never opens one (the person vouched for a
name, not for where its owner points it).

A package index whose files come from another host (`FILE_HOSTS`: PyPI's) is asked about
with that host, on the same port (`asked_with`): one `pip install` reaches both, and a
yes to the index is a yes to its files; a second question about a host the person has
never heard of would only invite a wrong no.
"""

from __future__ import annotations

from dataclasses import dataclass

from lily_kernel.config import NetworkConfig
from lily_kernel.host_patterns import HostPattern, parse_host_pattern
from lily_kernel.network.addresses import refused_kind
from lily_kernel.network.decisions import Destination, Verdict
from lily_kernel.prompting import network_policy as words

__all__ = ["FILE_HOSTS", "NetworkPolicy"]

# A package index's host and the hosts it serves its packages' files from.
FILE_HOSTS: dict[str, tuple[str, ...]] = {
    "pypi.org": ("files.pythonhosted.org",),
    "test.pypi.org": ("test-files.pythonhosted.org",),
}


@dataclass(frozen=True)
class NetworkPolicy:
    """The configured lists, read (config.py checked every entry)."""

    allow: tuple[HostPattern, ...] = ()
    deny: tuple[HostPattern, ...] = ()

    @classmethod
    def from_config(cls, network: NetworkConfig) -> NetworkPolicy:
        return cls(tuple(map(parse_host_pattern, network.allow)),
                   tuple(map(parse_host_pattern, network.deny)))

    def denying(self, destination: Destination) -> HostPattern | None:
        """The `deny` entry that names the destination, if any."""
        return next((p for p in self.deny if p.matches(destination.host, destination.port)),
                    None)

    def allowing(self, destination: Destination) -> tuple[HostPattern, ...]:
        """The `allow` entries that name the destination."""
        return tuple(p for p in self.allow if p.matches(destination.host, destination.port))

    def verdict(self, destination: Destination, auto: bool) -> Verdict | None:
        """What the lists (and full auto) decide alone; None: the person is asked."""
        host, port = destination.host, destination.port
        if (entry := self.denying(destination)) is not None:
            return Verdict(False, "policy", words.denied_host(host, str(entry)))
        if allowing := self.allowing(destination):
            return Verdict(True, "policy",
                           exact=any(p.names_exactly(host, port) for p in allowing),
                           named=any(p.names_host(host, port) for p in allowing))
        if (kind := _local_address(host)) is not None:  # the proxy would refuse it anyway:
            return Verdict(False, "refused-address",  # no question about it
                           words.local_address(host, kind))
        if auto:
            return Verdict(False, "policy", words.refused_under_auto(host))
        return None

    def asked_with(self, destination: Destination) -> tuple[Destination, ...]:
        """The hosts a question about `destination` covers too (its index's file hosts,
        same port), but for those the lists decide alone (denied, or already allowed)."""
        return tuple(
            along for name in FILE_HOSTS.get(destination.host, ())
            if not self.denying(along := Destination(name, destination.port))
            and not self.allowing(along))


def _local_address(host: str) -> str | None:
    """The kind of a loopback, link-local or private address the client named as such
    (a name is resolved by the proxy, later), or None."""
    if not any(c == ":" for c in host) and not host.replace(".", "").isdigit():
        return None
    kind = refused_kind(host)
    return None if kind == "unreadable" else kind
