"""The seam between the proxy and the policy: what a connection asks for, what the policy
answers, and what the proxy reports when a connection ends.

The proxy (proxy.py) knows sockets and addresses, never the person; the policy
(policy.py and the runtime's question in the cell) knows hosts and the person, never
sockets. A `Decider` is called once per new connection, from the proxy's own thread, and
may block while the person is asked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lily_kernel.events.kinds import NetworkDecidedBy

__all__ = ["Decider", "Destination", "Finished", "Reporter", "Verdict"]


@dataclass(frozen=True)
class Destination:
    """Where a connection asks to go: the host as the client named it (a name or an
    address, lower-cased, no trailing dot) and the port."""

    host: str
    port: int


@dataclass(frozen=True)
class Verdict:
    """The policy's answer for one destination. `reason` is the one line the model and the
    person read when the connection is refused (empty when allowed). `exact`: the
    destination is an address that `network.allow` names exactly, with its port (e.g.
    `127.0.0.1:8765`): the one way a loopback, link-local or private address is reached
    (the proxy refuses such an address otherwise, whatever `allowed` says). `named`: the
    destination is a host name that `network.allow` names itself (no wildcard): it may
    resolve to a private address, never to loopback, link-local or metadata."""

    allowed: bool
    decided_by: NetworkDecidedBy  # (events/kinds.py says who each is)
    reason: str = ""
    exact: bool = False
    named: bool = False


@dataclass(frozen=True)
class Finished:
    """What the proxy reports when a connection ends (or was refused before it began)."""

    destination: Destination
    verdict: Verdict
    address: str  # the address actually connected to ("" when refused before connecting)
    bytes_sent: int
    bytes_received: int


Decider = Callable[[Destination], Verdict]
Reporter = Callable[[Finished], None]
