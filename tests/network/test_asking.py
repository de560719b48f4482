"""The session's host decisions (network/asking.py): the policy first, then the person,
asked once however many connections wait for the same answer; the answers remembered
(y: the tool call, a: the session, N: the tool call); no one to ask is a refusal; every
ending a `network` event."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from lily_kernel.config import NetworkConfig
from lily_kernel.network.asking import HostDecisions, ToolCall
from lily_kernel.network.decisions import Destination, Finished, Verdict
from lily_kernel.network.policy import NetworkPolicy

PYPI = Destination("pypi.org", 443)


class Person:
    """Answers each question with the next reply, counting the questions; `gate` holds the
    answer until set (connections pile up meanwhile)."""

    def __init__(self, *replies: str | None, gate: threading.Event | None = None) -> None:
        self.replies = list(replies)
        self.asked: list[Destination] = []
        self.gate = gate

    def __call__(self, destination: Destination) -> str | None:
        self.asked.append(destination)
        if self.gate is not None:
            assert self.gate.wait(30)
        return self.replies.pop(0)


def _decisions(allow: tuple[str, ...] = (), deny: tuple[str, ...] = (),
               auto: bool = False) -> HostDecisions:
    policy = NetworkPolicy.from_config(NetworkConfig(allow, deny))
    return HostDecisions(lambda: policy, lambda: auto)


def test_allowed_and_denied_hosts_ask_no_one() -> None:
    decisions = _decisions(allow=("pypi.org",), deny=("evil.org",))
    person = Person()
    decisions.begin(ToolCall("shell", None, person))
    assert decisions.decide(PYPI) == Verdict(True, "policy", named=True)  # pypi.org itself
    denied = decisions.decide(Destination("evil.org", 443))
    assert not denied.allowed and "network.deny" in denied.reason
    assert person.asked == []


def test_yes_holds_for_the_tool_call_always_for_the_session() -> None:
    decisions = _decisions()
    first = ToolCall("shell", "pdf", Person("y"))
    decisions.begin(first)
    assert decisions.decide(PYPI) == Verdict(True, "person")
    assert decisions.decide(PYPI) == Verdict(True, "session")  # not asked again
    assert first.ask.asked == [PYPI]  # type: ignore[attr-defined]
    decisions.end(first)
    second = ToolCall("shell", None, Person("a"))
    decisions.begin(second)
    assert decisions.decide(PYPI) == Verdict(True, "person")  # y held for one call only
    decisions.end(second)
    third = ToolCall("python", None, Person("n"))
    decisions.begin(third)
    assert decisions.decide(PYPI) == Verdict(True, "session")  # a: the session's
    assert not decisions.decide(Destination("pypi.org", 22)).allowed  # another port: asked
    assert third.ask.asked == [Destination("pypi.org", 22)]  # type: ignore[attr-defined]


def test_no_is_remembered_for_the_tool_call() -> None:
    decisions = _decisions()
    person = Person("n")
    call = ToolCall("shell", None, person)
    decisions.begin(call)
    refused = decisions.decide(PYPI)
    assert not refused.allowed and refused.decided_by == "person"
    assert "the person declined it" in refused.reason
    again = decisions.decide(PYPI)  # pip's retries are not five questions
    assert not again.allowed and again.decided_by == "session"
    assert len(person.asked) == 1
    assert call.blocked == [refused.reason]


def test_no_one_to_ask_refuses_with_the_reason() -> None:
    decisions = _decisions()
    call = ToolCall("shell", None, Person(None), nobody="this notebook runs without input")
    decisions.begin(call)
    refused = decisions.decide(PYPI)
    assert refused == Verdict(False, "no-answer", refused.reason)
    assert refused.reason.startswith("blocked by Lily's network policy: pypi.org (not allowed;")
    assert "this notebook runs without input" in refused.reason
    decisions.end(call)
    between = decisions.decide(PYPI)  # code left running between cells: no tool call
    assert between.decided_by == "no-answer" and "no tool call is running" in between.reason


def test_full_auto_refuses_unnamed_hosts_without_asking() -> None:
    decisions = _decisions(allow=("files.pythonhosted.org",), auto=True)
    person = Person("y")
    decisions.begin(ToolCall("shell", None, person))
    refused = decisions.decide(PYPI)
    assert not refused.allowed and "full auto" in refused.reason
    assert decisions.decide(Destination("files.pythonhosted.org", 443)).allowed
    assert person.asked == []


def test_connections_waiting_on_one_question_take_its_answer() -> None:
    """Eight connections to one host while the person is asked: one question, eight
    yeses; a connection to another host waits its turn and gets its own question."""
    gate = threading.Event()
    person = Person("y", "n", gate=gate)
    decisions = _decisions()
    decisions.begin(ToolCall("shell", None, person))
    with ThreadPoolExecutor(9) as pool:
        same = [pool.submit(decisions.decide, PYPI) for _ in range(8)]
        other = pool.submit(decisions.decide, Destination("example.com", 443))
        while not person.asked:
            threading.Event().wait(0.005)
        gate.set()
        verdicts = [f.result(30) for f in same]
        elsewhere = other.result(30)
    assert all(v.allowed for v in verdicts)
    assert sorted(v.decided_by for v in verdicts).count("person") == 1
    assert len(person.asked) == 2 and set(person.asked) == {PYPI, Destination("example.com", 443)}
    if person.asked[0] == PYPI:
        assert not elsewhere.allowed


def test_every_ending_is_an_event_with_the_call_that_made_it() -> None:
    decisions = _decisions(allow=("pypi.org",))
    call = ToolCall("shell", "pdf", Person())
    decisions.begin(call)
    verdict = decisions.decide(PYPI)
    assert decisions.open_connections(call) == 1
    decisions.report(Finished(PYPI, verdict, "151.101.0.223", 517, 20_480))
    assert decisions.open_connections(call) == 0
    [event] = decisions.take_events()
    assert event.as_data() == {
        "host": "pypi.org", "port": 443, "allowed": True, "decided_by": "policy",
        "reason": "", "address": "151.101.0.223", "bytes_sent": 517,
        "bytes_received": 20_480, "tool": "shell", "skill": "pdf"}
    assert decisions.take_events() == []
    [(key, seen)] = decisions.seen_hosts()
    assert key == ("pypi.org", 443) and seen.connections == 1 and seen.bytes_received == 20_480
