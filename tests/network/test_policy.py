"""network.allow / network.deny: how an entry names hosts (host_patterns.py), how config
reads the key (a clear error for a bad entry, the person's variables, an untrusted
lily.yaml's allow held), and what the policy decides before anyone is asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from lily_kernel.config import NetworkConfig, load_config
from lily_kernel.environment import Workspace
from lily_kernel.errors import ConfigError
from lily_kernel.host_patterns import HostPattern, parse_host_pattern
from lily_kernel.network.decisions import Destination
from lily_kernel.network.policy import NetworkPolicy
from lily_kernel.trust import TrustStore


@pytest.mark.parametrize(("entry", "host", "port", "matches"), [
    ("pypi.org", "pypi.org", 443, True),
    ("pypi.org", "files.pypi.org", 443, False),  # a name is that host only
    ("PyPI.org.", "pypi.org", 80, True),  # case and the trailing dot do not matter
    ("*.example.com", "a.example.com", 443, True),
    ("*.example.com", "a.b.example.com", 443, True),
    ("*.example.com", "example.com", 443, False),  # subdomains, not the domain itself
    ("*.example.com", "badexample.com", 443, False),
    ("example.com:8443", "example.com", 8443, True),
    ("example.com:8443", "example.com", 443, False),
    ("*", "anything.org", 22, True),
    ("*:443", "anything.org", 80, False),
    ("127.0.0.1:8765", "127.0.0.1", 8765, True),
    ("127.0.0.1:8765", "127.0.0.1", 8766, False),
    ("127.0.0.1", "localhost", 80, False),  # an address names no name
    ("[::1]:8765", "::1", 8765, True),
    ("::0001", "::1", 1, True),  # addresses compare as addresses
    ("bücher.de", "xn--bcher-kva.de", 443, True),  # an IDN, in its ASCII form
])
def test_an_entry_matches_what_it_names(entry: str, host: str, port: int,
                                        matches: bool) -> None:
    assert parse_host_pattern(entry).matches(host, port) is matches


@pytest.mark.parametrize("entry", ["https://pypi.org", "pypi.org/simple", "user@host",
                                   "a b", "", "*.", "a.*.com", "pypi.org:0",
                                   "pypi.org:99999", "pypi.org:http", "[::1", "-bad.org"])
def test_an_entry_that_names_no_host_is_refused(entry: str) -> None:
    with pytest.raises(ValueError):
        parse_host_pattern(entry)


def test_only_an_address_with_its_port_names_it_exactly() -> None:
    """What opens a loopback or private address: the address and the port, both named."""
    assert parse_host_pattern("127.0.0.1:8765").names_exactly("127.0.0.1", 8765)
    assert not parse_host_pattern("127.0.0.1").names_exactly("127.0.0.1", 8765)
    assert not parse_host_pattern("*:8765").names_exactly("127.0.0.1", 8765)
    assert str(parse_host_pattern("[::1]:80")) == "[::1]:80"
    assert str(HostPattern("example.com", 443, subdomains=True)) == "*.example.com:443"


def test_only_a_host_name_itself_may_reach_a_private_address() -> None:
    """A company's mirror (`pypi.corp.example` resolving to 10.x): the name itself in
    network.allow, with or without its port; never a wildcard, `*` or an asked yes."""
    policy = _policy(allow=("pypi.corp.example", "mirror.example:8443", "*.corp.example",
                            "*:443"))
    for host, port, named in [("pypi.corp.example", 443, True),
                              ("mirror.example", 8443, True),
                              ("mirror.example", 443, False),  # by `*:443`, not by name
                              ("other.corp.example", 443, False),
                              ("elsewhere.org", 443, False)]:
        verdict = policy.verdict(Destination(host, port), auto=False)
        assert verdict is not None and verdict.allowed
        assert verdict.named is named, (host, port)
    assert _policy().verdict(Destination("pypi.corp.example", 443), auto=False) is None
    assert not parse_host_pattern("10.0.0.5").names_host("10.0.0.5", 443)


def _policy(allow: tuple[str, ...] = (), deny: tuple[str, ...] = ()) -> NetworkPolicy:
    return NetworkPolicy.from_config(NetworkConfig(allow, deny))


def test_deny_beats_allow_and_an_unnamed_host_is_asked() -> None:
    policy = _policy(allow=("*.example.com", "pypi.org"), deny=("evil.example.com",))
    evil = policy.verdict(Destination("evil.example.com", 443), auto=False)
    assert evil is not None and not evil.allowed and evil.decided_by == "policy"
    assert "network.deny names it: evil.example.com" in evil.reason
    ok = policy.verdict(Destination("a.example.com", 443), auto=False)
    assert ok is not None and ok.allowed and not ok.exact
    assert policy.verdict(Destination("other.org", 443), auto=False) is None  # asked


def test_full_auto_refuses_a_host_nobody_named() -> None:
    policy = _policy(allow=("pypi.org",))
    refused = policy.verdict(Destination("other.org", 443), auto=True)
    assert refused is not None and not refused.allowed
    assert refused.reason.startswith("blocked by Lily's network policy: other.org")
    assert "add it to network.allow" in refused.reason
    allowed = policy.verdict(Destination("pypi.org", 443), auto=True)
    assert allowed is not None and allowed.allowed


def test_an_address_named_with_its_port_is_exact() -> None:
    policy = _policy(allow=("127.0.0.1:8765", "10.0.0.5"))
    named = policy.verdict(Destination("127.0.0.1", 8765), auto=False)
    assert named is not None and named.allowed and named.exact
    portless = policy.verdict(Destination("10.0.0.5", 80), auto=False)
    assert portless is not None and portless.allowed and not portless.exact


# --- lily.yaml and the person's variables --------------------------------------------


def test_lily_yaml_reads_lists_one_way(tmp_path: Path) -> None:
    (tmp_path / "lily.yaml").write_text(
        "network:\n  allow: pypi.org, files.pythonhosted.org\n  deny: ['*.evil.org']\n")
    network = load_config(tmp_path, {}).network
    assert network.allow == ("pypi.org", "files.pythonhosted.org")
    assert network.deny == ("*.evil.org",)


def test_a_bad_entry_is_a_config_error_naming_the_file_key_and_entry(tmp_path: Path) -> None:
    (tmp_path / "lily.yaml").write_text("network:\n  allow: ['https://pypi.org']\n")
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path, {})
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / 'lily.yaml'}: key 'network.allow': "
                              "'https://pypi.org' is not a host")
    with pytest.raises(ConfigError, match=r"^LILY_NETWORK_DENY: key 'network.deny': "
                                          r"'a b' is not a host"):
        load_config(tmp_path / "none", {"LILY_NETWORK_DENY": "a b"})


def test_the_persons_variables_set_the_lists(tmp_path: Path) -> None:
    (tmp_path / "lily.yaml").write_text("network:\n  deny: evil.org\n")
    network = load_config(tmp_path, {"LILY_NETWORK_ALLOW": "pypi.org, *.example.com"}).network
    assert network == NetworkConfig(("pypi.org", "*.example.com"), ("evil.org",))


def test_an_untrusted_lily_yaml_allow_is_held_and_named(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "lily.yaml").write_text("network:\n  allow: [pypi.org]\n  deny: [evil.org]\n")
    env = Workspace.load(folder, {"LILY_HOME": str(home), "HOME": str(home)},
                         trust_store=TrustStore(None))
    assert env.config.network.allow == ()  # held
    assert env.config.network.deny == ("evil.org",)  # a deny only narrows: it applies
    held = [line for line in env.held_settings if line.startswith("network.allow")]
    assert held and "pypi.org" in held[0] and "workspace data" in held[0]
    _, _, settings = env.pending_trust()
    assert any("network.allow: pypi.org" in line for line in settings)
    mine = Workspace.load(folder, {"LILY_HOME": str(home), "HOME": str(home),
                                   "LILY_NETWORK_ALLOW": "pypi.org"},
                          trust_store=TrustStore(None))
    assert mine.config.network.allow == ("pypi.org",)  # the person's own: applies
    assert not [line for line in mine.held_settings if line.startswith("network.allow")]


def test_a_refusal_the_output_says_already_is_not_added_twice() -> None:
    from lily_kernel.prompting.network_policy import network_refusals_text

    line = "blocked by Lily's network policy: example.org (not allowed; ask the person or " \
           "add it to network.allow)"
    assert network_refusals_text("[exit code 56]\ncurl: (56) 403", [line]) == \
        f"[exit code 56]\ncurl: (56) 403\n{line}"
    assert network_refusals_text(f"[exit code 56]\n{line}\n", [line]) == \
        f"[exit code 56]\n{line}\n"
    assert network_refusals_text("", [line]) == line


@pytest.mark.parametrize("host", ["127.0.0.1", "169.254.169.254", "10.1.2.3", "::1"])
def test_a_local_address_nobody_named_is_refused_without_a_question(host: str) -> None:
    """Only an exact entry opens it (the proxy refuses it otherwise): asking the person
    would change nothing."""
    refused = _policy().verdict(Destination(host, 8888), auto=False)
    assert refused is not None and not refused.allowed
    assert refused.decided_by == "refused-address" and "unless network.allow names it" \
        in refused.reason
    assert _policy().verdict(Destination("example.org", 8888), auto=False) is None
    assert _policy().verdict(Destination("8.8.8.8", 80), auto=False) is None  # asked
