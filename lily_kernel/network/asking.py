"""The session's decisions about hosts: the `Decider` the proxy calls for each new
connection (from a thread of its own) and the `Reporter` it tells when one ends.

What the policy does not decide (network/policy.py) is put to the person, in the cell of
the tool call that runs (`ToolCall`, set by the runtime around each call): at most one
question at a time, and a connection to a destination already being asked about waits
for that answer instead of asking again. The answers are remembered: `y` for the tool
call that asked (its later connections to the same host and port are not asked again),
`a` for the rest of the session, `N` (or no answer) for that tool call. A yes about a
package index covers the host its files come from (`NetworkPolicy.asked_with`), which
the question names. Where no tool
call runs (code left running between cells) or no one can answer, the host is refused.

Every connection's ending becomes a `network` event (events/kinds.py), queued here and
written by the runtime on its own thread (`take_events`): the event log is not
thread-safe.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from lily_kernel.events import NetworkConnection
from lily_kernel.network.decisions import Destination, Finished, Verdict
from lily_kernel.network.policy import NetworkPolicy
from lily_kernel.prompting import network_policy as words

__all__ = ["Answer", "HostDecisions", "HostSeen", "ToolCall"]

Key = tuple[str, int]
Answer = str | None  # the person's reply as typed; None: no one could answer
_YES, _ALWAYS = frozenset({"y", "yes"}), frozenset({"a", "always"})
# Why no one is asked when no tool call is running.
NO_CALL = "no tool call is running (code left running between cells)"


@dataclass(eq=False)
class ToolCall:
    """The tool call running now, whose cell may ask: `ask` puts the question about a
    destination to the person and blocks until the reply (None: no one can answer, or
    the call ended first); `nobody`: why no one can answer, where known."""

    tool: str
    skill: str | None
    ask: Callable[[Destination], Answer]
    nobody: str | None = None
    granted: set[Key] = field(default_factory=set)
    refused: dict[Key, Verdict] = field(default_factory=dict)
    open: int = 0  # connections decided during the call and not reported yet
    ended: bool = False
    blocked: list[str] = field(default_factory=list)  # the refusals said in the call


@dataclass
class HostSeen:
    """A destination as `/network` lists it: the last decision and who made it, the
    connections and the bytes each way."""

    allowed: bool
    decided_by: str
    reason: str = ""
    connections: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0


class HostDecisions:
    """One session's host decisions over its policy in force (`policy`, read at each
    decision) and its profile (`auto`: full auto)."""

    def __init__(self, policy: Callable[[], NetworkPolicy], auto: Callable[[], bool]) -> None:
        self._policy, self._auto = policy, auto
        self._lock = threading.Lock()  # the state below
        self._asking = threading.Lock()  # one question at a time
        self._call: ToolCall | None = None
        self.always: set[Key] = set()  # `a`: for the session
        self.seen: dict[Key, HostSeen] = {}
        self._makers: dict[Key, deque[ToolCall | None]] = {}
        self._events: deque[NetworkConnection] = deque()

    # --- the runtime's side -------------------------------------------------------

    def begin(self, call: ToolCall) -> None:
        with self._lock:
            self._call = call

    def end(self, call: ToolCall) -> None:
        """The call is over: it asks no more (a question still open is answered no)."""
        with self._lock:
            call.ended = True
            if self._call is call:
                self._call = None

    def take_events(self) -> list[NetworkConnection]:
        """The events of the connections that ended since the last take, in order."""
        with self._lock:
            events = list(self._events)
            self._events.clear()
        return events

    def seen_hosts(self) -> list[tuple[Key, HostSeen]]:
        """Every destination of the session so far, by host and port (`/network`)."""
        with self._lock:
            return [(key, HostSeen(**vars(seen))) for key, seen in sorted(self.seen.items())]

    # --- the proxy's side ---------------------------------------------------------

    def decide(self, destination: Destination) -> Verdict:
        """The Decider: may block while the person is asked."""
        with self._lock:
            call = self._call
            verdict = self._known(destination, call)
        if verdict is None:
            verdict = self._ask(destination, call)
        key = (destination.host, destination.port)
        with self._lock:
            self._makers.setdefault(key, deque()).append(call)
            if call is not None:
                call.open += 1
                if not verdict.allowed and verdict.reason not in call.blocked:
                    call.blocked.append(verdict.reason)
        return verdict

    def report(self, finished: Finished) -> None:
        """The Reporter: the connection's event, queued for the runtime to write."""
        destination, verdict = finished.destination, finished.verdict
        key = (destination.host, destination.port)
        with self._lock:
            makers = self._makers.get(key)
            call = makers.popleft() if makers else None
            if call is not None:
                call.open -= 1
                if not verdict.allowed and verdict.reason and verdict.reason not in call.blocked:
                    call.blocked.append(verdict.reason)  # the address, refused by the proxy
            seen = self.seen.setdefault(key, HostSeen(verdict.allowed, verdict.decided_by))
            seen.allowed, seen.decided_by = verdict.allowed, verdict.decided_by
            seen.reason = verdict.reason
            seen.connections += 1
            seen.bytes_sent += finished.bytes_sent
            seen.bytes_received += finished.bytes_received
            self._events.append(NetworkConnection(
                host=destination.host, port=destination.port, allowed=verdict.allowed,
                decided_by=verdict.decided_by, reason=verdict.reason,
                address=finished.address, bytes_sent=finished.bytes_sent,
                bytes_received=finished.bytes_received,
                tool=call.tool if call is not None else None,
                skill=call.skill if call is not None else None))

    def open_connections(self, call: ToolCall) -> int:
        with self._lock:
            return call.open

    # --- deciding -----------------------------------------------------------------

    def _known(self, destination: Destination, call: ToolCall | None) -> Verdict | None:
        """What is decided without a question: the policy, then the answers given."""
        verdict = self._policy().verdict(destination, self._auto())
        if verdict is not None:
            return verdict
        key = (destination.host, destination.port)
        if key in self.always or (call is not None and key in call.granted):
            return Verdict(True, "session")
        if call is not None and key in call.refused:
            refused = call.refused[key]
            return Verdict(False, "session", refused.reason)
        return None

    def _ask(self, destination: Destination, call: ToolCall | None) -> Verdict:
        """The person's answer, one question at a time; a connection queued behind a
        question about the same destination takes its answer."""
        host = destination.host
        if call is None or call.ended:
            return Verdict(False, "no-answer", words.unanswered_host(host, NO_CALL))
        with self._asking:
            with self._lock:
                known = self._known(destination, call)
            if known is not None:
                return known
            reply = None if call.ended else call.ask(destination)
            verdict = self._answered(destination, call, reply)
        return verdict

    def _answered(self, destination: Destination, call: ToolCall, reply: Answer) -> Verdict:
        """The reply, remembered: a yes covers the hosts asked with this one (an index's
        file host: network/policy.py), as the question said."""
        key, host = (destination.host, destination.port), destination.host
        keys = {key, *((d.host, d.port) for d in self._policy().asked_with(destination))}
        said = (reply or "").strip().lower()
        with self._lock:
            if reply is not None and said in _ALWAYS:
                self.always.update(keys)
                return Verdict(True, "person")
            if reply is not None and said in _YES:
                call.granted.update(keys)
                return Verdict(True, "person")
            if reply is None:
                nobody = call.nobody or ("the tool call ended before an answer" if call.ended
                                         else "no one answered")
                verdict = Verdict(False, "no-answer", words.unanswered_host(host, nobody))
            else:
                verdict = Verdict(False, "person", words.declined_host(host))
            call.refused[key] = verdict
            return verdict
