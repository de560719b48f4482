"""A package index is asked about with the host its files come from (network/policy.py's
FILE_HOSTS, network/asking.py): one question for `pip install` from PyPI, not one for
pypi.org and then one for files.pythonhosted.org; a yes covers both as the question
says, a no refuses only the index; the lists still decide each host alone."""

from __future__ import annotations

from lily_kernel.config import NetworkConfig
from lily_kernel.display.network import host_question
from lily_kernel.network.asking import HostDecisions, ToolCall
from lily_kernel.network.decisions import Destination, Verdict
from lily_kernel.network.policy import NetworkPolicy
from tests.network.test_asking import Person

PYPI = Destination("pypi.org", 443)
FILES = Destination("files.pythonhosted.org", 443)


def _decisions(allow: tuple[str, ...] = (), deny: tuple[str, ...] = ()) -> HostDecisions:
    policy = NetworkPolicy.from_config(NetworkConfig(allow, deny))
    return HostDecisions(lambda: policy, lambda: False)


def test_always_for_the_index_opens_its_file_host_for_the_session() -> None:
    decisions = _decisions()
    person = Person("a")
    decisions.begin(call := ToolCall("shell", None, person))
    assert decisions.decide(PYPI) == Verdict(True, "person")
    assert decisions.decide(FILES) == Verdict(True, "session")
    assert person.asked == [PYPI]  # one question
    decisions.end(call)
    later = Person("n")
    decisions.begin(ToolCall("python", None, later))
    assert decisions.decide(FILES).allowed and later.asked == []
    other_port = Destination("files.pythonhosted.org", 8443)
    assert not decisions.decide(other_port).allowed and later.asked == [other_port]


def test_yes_for_the_index_opens_its_file_host_for_the_tool_call_only() -> None:
    decisions = _decisions()
    decisions.begin(call := ToolCall("shell", None, Person("y")))
    assert decisions.decide(PYPI).allowed and decisions.decide(FILES).allowed
    decisions.end(call)
    later = Person("n")
    decisions.begin(ToolCall("shell", None, later))
    assert not decisions.decide(FILES).allowed
    assert later.asked == [FILES]  # asked again, alone


def test_no_for_the_index_refuses_only_the_index() -> None:
    decisions = _decisions()
    person = Person("n", "y")
    decisions.begin(ToolCall("shell", None, person))
    assert not decisions.decide(PYPI).allowed
    assert decisions.decide(FILES) == Verdict(True, "person")
    assert person.asked == [PYPI, FILES]


def test_the_lists_decide_the_file_host_alone() -> None:
    denied = NetworkPolicy.from_config(NetworkConfig(deny=("files.pythonhosted.org",)))
    assert denied.asked_with(PYPI) == ()  # not named in the question
    decisions = _decisions(deny=("files.pythonhosted.org",))
    decisions.begin(ToolCall("shell", None, Person("a")))
    assert decisions.decide(PYPI).allowed
    refused = decisions.decide(FILES)
    assert not refused.allowed and "network.deny names it" in refused.reason
    allowed = NetworkPolicy.from_config(NetworkConfig(allow=("files.pythonhosted.org",)))
    assert allowed.asked_with(PYPI) == ()  # already open: nothing to ask
    assert NetworkPolicy().asked_with(PYPI) == (FILES,)
    assert NetworkPolicy().asked_with(FILES) == ()  # the file host alone is asked alone
    assert NetworkPolicy().asked_with(Destination("example.org", 443)) == ()


def test_the_question_names_the_file_host_and_what_a_yes_covers() -> None:
    question = host_question("pypi.org", 443, "shell", None, ("files.pythonhosted.org",))
    first, _, _, last = question.splitlines()
    assert first == ('Network: "shell" wants to connect to "pypi.org" port 443, a package '
                     'index, and to "files.pythonhosted.org", where it keeps its files.')
    assert "yes to these hosts" in question and last == "Allow it? [y/N/a] "
    assert host_question("example.org", 443, "shell", None).startswith(
        'Network: "shell" wants to connect to "example.org" port 443.\n')
