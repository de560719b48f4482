"""Who lets code run: the shell is asked by default; naming it in `tools.allow` (the
person's variable or a trusted lily.yaml) or the profile `auto` lets it run unasked;
`tools.ask`, a folder the person does not trust and `deny` win over both; an untrusted
lily.yaml can neither allow it nor turn on auto; `requires_tools: [shell]`."""

from __future__ import annotations

from pathlib import Path

import pytest

from lily_kernel.environment import Workspace
from lily_kernel.skills.fields import ANY_COMMAND, shell_commands, tool_names_of_entries
from lily_kernel.tools import PolicyState, ToolPolicy
from tests.conftest import write_skill

ASKED = frozenset({"shell"})


@pytest.mark.parametrize(("policy", "decision"), [
    (ToolPolicy(asked=ASKED), "ask"),  # allow: "*" covers it as asked
    (ToolPolicy(asked=ASKED, auto=True), "allow"),
    (ToolPolicy(allow=("shell",)), "allow"),  # named: not asked (configured_policy)
    (ToolPolicy(asked=ASKED, ask=("shell",), auto=True), "ask"),  # tools.ask stays
    (ToolPolicy(asked=ASKED, untrusted=ASKED, auto=True), "ask"),  # so does the folder's
    (ToolPolicy(asked=ASKED, approved=ASKED), "allow"),  # "always" this session
    (ToolPolicy(asked=ASKED, approved=ASKED, untrusted=ASKED), "ask"),
    (ToolPolicy(asked=ASKED, deny=("shell",), auto=True), "deny"),
    (ToolPolicy(allow=("read",), asked=ASKED, auto=True), "deny"),  # not covered at all
])
def test_the_decision_for_a_tool_asked_by_default(policy: ToolPolicy, decision: str) -> None:
    assert policy.decision("shell") == decision


def test_always_is_offered_only_for_the_default_question() -> None:
    assert ToolPolicy(asked=ASKED).offers_always("shell")
    assert not ToolPolicy(asked=ASKED, untrusted=ASKED).offers_always("shell")
    assert not ToolPolicy(ask=("shell",)).offers_always("shell")  # the person's tools.ask
    assert ToolPolicy(asked=ASKED).why_asked("shell") == "default"
    assert ToolPolicy(asked=ASKED, untrusted=ASKED).why_asked("shell") == "untrusted"


def test_the_session_state_chosen_wins_over_configured() -> None:
    state = PolicyState("auto")
    assert ToolPolicy(asked=ASKED).under(state).decision("shell") == "allow"
    assert state.update(chosen="ask") and state.profile == "ask"
    assert not state.update(configured="auto")  # /policy's choice holds
    state.always.add("shell")
    assert ToolPolicy(asked=ASKED).under(state).decision("shell") == "allow"


@pytest.fixture
def person(environ: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A person who has not trusted the folder (no LILY_TRUST)."""
    monkeypatch.delenv("LILY_TRUST", raising=False)
    return {k: v for k, v in environ.items() if k != "LILY_TRUST"}


WIDENING = "tools:\n  allow: [read, list, shell]\npolicy: auto\n"


def test_an_untrusted_lily_yaml_allows_no_shell_and_no_auto(workspace: Path,
                                                            person: dict[str, str]) -> None:
    (workspace / "lily.yaml").write_text(WIDENING)
    env = Workspace.load(workspace, person)
    assert env.config.policy == "ask"
    policy = env.policy.under(PolicyState(env.config.policy))
    assert policy.decision("shell") == "ask" and policy.why_asked("shell") == "untrusted"
    assert not policy.offers_always("shell")
    held = env.trust.held_settings
    assert "tools: shell would be 'allow', stays 'ask'" in held
    assert any(line.startswith("policy: auto (would let the model run code without asking")
               for line in held), held
    # Even the person's auto does not skip the untrusted folder's question.
    env = Workspace.load(workspace, {**person, "LILY_POLICY": "auto"})
    assert env.policy.under(PolicyState(env.config.policy)).decision("shell") == "ask"


def test_a_trusted_lily_yaml_allows_the_shell_and_auto(workspace: Path,
                                                       person: dict[str, str]) -> None:
    (workspace / "lily.yaml").write_text(WIDENING)
    env = Workspace.load(workspace, {**person, "LILY_TRUST": "workspace"})
    assert env.config.policy == "auto" and env.trust.held_settings == ()
    assert env.policy.decision("shell") == "allow"  # named in allow
    (workspace / "lily.yaml").write_text("policy: auto\n")
    env = Workspace.load(workspace, {**person, "LILY_TRUST": "workspace"})
    assert env.policy.decision("shell") == "ask"  # asked by default...
    assert env.policy.under(PolicyState(env.config.policy)).decision("shell") == "allow"


def test_a_lily_yaml_changed_since_trust_keeps_the_shell_asked_by_default(
        workspace: Path, person: dict[str, str]) -> None:
    """The folder is trusted, its lily.yaml is not (changed since): the file's `allow`
    is held, and the shell stays asked as by default (auto and "always" apply), never
    as if `tools.ask` named it."""
    (workspace / "lily.yaml").write_text("agent: default\n")
    env = Workspace.load(workspace, person)
    env.trust.trust(env.pending_trust()[0])
    (workspace / "lily.yaml").write_text("tools:\n  allow: [read, shell]\n")
    env = Workspace.load(workspace, person)
    assert env.trust.trusted() and not env.trust.config_trusted()
    assert env.policy.decision("shell") == "ask" and env.policy.why_asked("shell") == "default"
    assert env.policy.offers_always("shell") and "shell" not in env.policy.ask
    assert env.policy.under(PolicyState("auto")).decision("shell") == "allow"
    assert env.policy.decision("write") == "deny"  # what the file narrows applies


@pytest.mark.parametrize("tool", ["shell", "python"])
def test_requires_tools_is_eligible_unless_the_policy_denies_it(
        tool: str, workspace: Path, environ: dict[str, str]) -> None:
    write_skill(workspace / "skills", "runner",
                f"---\nsummary: Runs code\nrequires_tools: [{tool}]\n---\nRun it.\n")
    env = Workspace.load(workspace, environ)
    assert env.load_snapshot(1).get("runner") is not None  # asked counts as allowed
    denied = Workspace.load(workspace, {**environ, "LILY_TOOLS_DENY": tool})
    snapshot = denied.load_snapshot(1)
    assert snapshot.get("runner") is None
    [why] = [d for d in snapshot.diagnostics if d.skill == "runner"]
    assert why.kind.value == "policy" and tool in why.reason


@pytest.mark.parametrize(("entries", "names", "commands"), [
    (("Bash",), {"bash", ANY_COMMAND}, None),
    (("Bash(*)",), {"bash", ANY_COMMAND}, None),
    (("Bash(git status:*)", "Read"), {"bash", "read"}, ("git status:*",)),
    (("Bash(git status:*)", "Bash(npm test)"), {"bash"}, ("git status:*", "npm test")),
    (("Bash(git:*)", "Bash"), {"bash", ANY_COMMAND}, None),  # a bare Bash: any command
    (("shell", "Bash(git:*)"), {"shell", "bash"}, None),  # the shell named: any command
    (("Read",), {"read"}, None),  # the shell is not kept at all
])
def test_allowed_tools_bash_entries(entries: tuple[str, ...], names: set[str],
                                    commands: tuple[str, ...] | None) -> None:
    assert tool_names_of_entries(entries) == names
    assert shell_commands(entries) == commands


def test_narrowing_keeps_the_shell_for_bash_and_never_widens(environ, workspace) -> None:
    env = Workspace.load(workspace, {**environ, "LILY_TOOLS_DENY": "shell"})
    offered = env.policy.model_tools(env.registry, frozenset({"bash"}))
    assert "shell" not in [t.name for t in offered]  # denied stays denied
    env = Workspace.load(workspace, environ)
    names = [t.name for t in env.policy.model_tools(env.registry, frozenset({"bash", "read"}))]
    assert names == ["read", "shell"]
    names = [t.name for t in env.policy.model_tools(env.registry, frozenset({"read"}))]
    assert names == ["read"]
    # A bare Bash (any command) keeps Python too: a command could run it anyway.
    names = [t.name for t in env.policy.model_tools(
        env.registry, tool_names_of_entries(("Bash", "Read")))]
    assert names == ["python", "read", "shell"]


def test_an_untrusted_lily_yaml_lowers_the_memory_limit_but_never_raises_it(
        workspace: Path, person: dict[str, str]) -> None:
    (workspace / "lily.yaml").write_text("memory_limit_mb: 512\n")
    assert Workspace.load(workspace, person).config.memory_limit_mb == 512
    (workspace / "lily.yaml").write_text("memory_limit_mb: 65536\n")
    env = Workspace.load(workspace, person)
    assert env.config.memory_limit_mb == 4096
    assert any(line.startswith("memory_limit_mb: 65536") for line in env.trust.held_settings)
    trusted = Workspace.load(workspace, {**person, "LILY_MEMORY_LIMIT_MB": "8192"})
    assert trusted.config.memory_limit_mb == 8192  # the person's own variable
