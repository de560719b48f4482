"""MCP servers in the configuration and the policy, without any server running:
lily.yaml's `mcp_servers` and the person's mcp.json, held until trusted, the policy's
`mcp__<server>` names, a skill's `allowed-tools` narrowing to them."""

from __future__ import annotations

from pathlib import Path

import pytest

from lily_kernel.config import ToolsConfig
from lily_kernel.environment import Workspace
from lily_kernel.errors import ConfigError
from lily_kernel.tools import Tool, ToolContext, default_registry
from lily_kernel.tools.policy import configured_policy

SERVERS = "mcp_servers:\n  fx:\n    command: fx-server\n    args: [--flag, '${FX_ARG}']\n" \
          "    env: {TOKEN: '${FX_TOKEN:-none}'}\n"


async def _echo(args: dict[str, object], ctx: ToolContext) -> str:
    return "x"


def mcp_tool(name: str) -> Tool:
    server = name.split("__")[1]
    return Tool(name, "an MCP tool", dict, _echo, schema={"type": "object"}, asked=True,
                asks_untrusted=True, kept_by=frozenset({f"mcp__{server}", f"mcp__{server}__*"}))


def environ(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "LILY_HOME": str(tmp_path / "home" / ".lily"),
            "LILY_TRUST": "workspace", **extra}


def test_servers_from_lily_yaml_and_the_persons_file(tmp_path: Path) -> None:
    (tmp_path / "lily.yaml").write_text(SERVERS)
    (tmp_path / "home" / ".lily").mkdir(parents=True)
    (tmp_path / "home" / ".lily" / "mcp.json").write_text(
        '{"mcpServers": {"web": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}')
    env = Workspace.load(tmp_path, environ(tmp_path, FX_ARG="from-env"))
    fx, web = env.mcp_servers
    assert (fx.name, fx.origin, fx.transport) == ("fx", "workspace", "stdio")
    assert fx.config.args == ("--flag", "from-env") and fx.config.env == {"TOKEN": "none"}
    assert (web.name, web.origin, web.transport, web.target) == (
        "web", "person", "http", "http://127.0.0.1:9/mcp")


def test_an_untrusted_workspace_holds_its_servers_as_they_would_run(tmp_path: Path) -> None:
    (tmp_path / "lily.yaml").write_text(SERVERS + "tools:\n  allow: [mcp__fx__run]\n")
    env = Workspace.load(tmp_path, environ(tmp_path, LILY_TRUST="",
                                                 FX_TOKEN="sk-held-SECRET-123456"))
    assert env.mcp_servers == ()
    [line] = [h for h in env.trust.held_settings if h.startswith("mcp_servers")]
    # What trusting it would run, whole; its env by names only (no value, no secret),
    # and each of the person's variables it would be given, and how.
    assert line == ("mcp_servers: fx (fx-server --flag ${FX_ARG}; with TOKEN; sends $FX_ARG "
                    "(your environment) to fx-server as an argument; sends $FX_TOKEN (your "
                    "environment) to fx-server as its variable TOKEN) (starts the programs "
                    "and contacts the servers it names; stays (none))")
    assert "sk-held" not in line


def test_the_held_servers_line_stays_a_line(tmp_path: Path) -> None:
    many = "".join(f"  s{i}: {{command: run-{i}, headers: {{}}}}\n" for i in range(30))
    (tmp_path / "lily.yaml").write_text("mcp_servers:\n" + many +
                                        "  web: {type: http, url: 'https://mcp.example/x', "
                                        "headers: {Authorization: 'Bearer sk-x'}}\n")
    env = Workspace.load(tmp_path, environ(tmp_path, LILY_TRUST=""))
    [line] = [h for h in env.trust.held_settings if h.startswith("mcp_servers")]
    assert line.startswith("mcp_servers: s0 (run-0); s1 (run-1); ")
    assert "s19 (run-19); and 11 more (starts" in line and "sk-x" not in line


def test_every_variable_of_yours_a_server_would_get_is_named_or_counted(tmp_path: Path
                                                                       ) -> None:
    many = ", ".join(f"E{i}: '${{V{i}}}'" for i in range(30))
    (tmp_path / "lily.yaml").write_text(
        "mcp_servers:\n"
        "  web: {type: http, url: 'https://h.example/mcp?k=${KEY}', headers: "
        "{Authorization: 'Bearer ${KEY}', X-Token: '${KEY}', X-Other: '${OTHER:-x}'}}\n"
        f"  many: {{command: run, env: {{{many}}}}}\n")
    env = Workspace.load(tmp_path, environ(tmp_path, LILY_TRUST="", KEY="sk-KEY-123456"))
    [line] = [h for h in env.trust.held_settings if h.startswith("mcp_servers")]
    assert ("sends $KEY (your environment) to https://h.example in its URL, as header "
            "Authorization, as header X-Token; sends $OTHER (your environment) to "
            "https://h.example as header X-Other)") in line
    # 30 variables: too many to name, never some of them left out unsaid.
    assert "many (run; with E0, E1, E10, " in line
    assert "sends 30 of your environment's variables to run (too many to name here" in line
    assert "sk-KEY" not in line


@pytest.mark.parametrize(("config", "problem"), [
    ("mcp_servers:\n  fx: {}\n", "give either `command`"),
    ("mcp_servers:\n  fx: {command: a, url: 'http://x'}\n", "give either `command`"),
    ("mcp_servers:\n  a__b: {command: a}\n", "single '_' only"),
    ("mcp_servers:\n  fx: {type: http, command: a}\n", "type http needs a `url`"),
    ("mcp_servers:\n  fx: {comand: a}\n", "key 'mcp_servers.fx.comand': unknown key"),
    ("tools:\n  deny: [mcp__nope__x]\n", "unknown tool 'mcp__nope__x'"),
    ("mcp_servers:\n  GitHub: {command: a}\n  github: {command: b}\n",
     "MCP servers 'GitHub' and 'github': names are compared whatever their case"),
])
def test_a_broken_server_entry_is_a_config_error(tmp_path: Path, config: str,
                                                 problem: str) -> None:
    (tmp_path / "lily.yaml").write_text(config)
    with pytest.raises(ConfigError, match=None) as caught:
        Workspace.load(tmp_path, environ(tmp_path))
    assert problem in str(caught.value)


def test_policy_names_a_tool_or_a_whole_server_and_asks_by_default() -> None:
    registry = default_registry()
    for name in ("mcp__fx__run", "mcp__fx__stop", "mcp__gh__issue"):
        registry.register(mcp_tool(name))
    servers = frozenset({"fx", "gh"})
    policy = configured_policy(ToolsConfig(), registry, servers)
    assert policy.decision("mcp__fx__run") == "ask" and policy.why_asked("mcp__fx__run") \
        == "default"
    policy = configured_policy(ToolsConfig(allow=("read", "mcp__fx"), deny=("mcp__fx__stop",)),
                               registry, servers)
    assert [policy.decision(n) for n in ("mcp__fx__run", "mcp__fx__stop", "mcp__gh__issue")] \
        == ["allow", "deny", "deny"]


def test_allowed_tools_narrow_to_an_mcp_tool_or_its_server() -> None:
    registry = default_registry()
    for name in ("mcp__fx__run", "mcp__gh__issue"):
        registry.register(mcp_tool(name))
    policy = configured_policy(ToolsConfig(), registry, frozenset({"fx", "gh"}))

    def offered(*names: str) -> list[str]:
        return [t.name for t in policy.model_tools(registry, frozenset(names))
                if t.name.startswith("mcp__")]

    assert offered("read") == []
    assert offered("mcp__fx__run") == ["mcp__fx__run"]
    assert offered("mcp__gh") == ["mcp__gh__issue"]
    assert offered("mcp__gh__*", "mcp__fx__run") == ["mcp__fx__run", "mcp__gh__issue"]


def test_server_names_in_a_policy_compare_whatever_their_case() -> None:
    servers = frozenset({"GitHub"})
    listed = default_registry()  # before the server started: its tools not listed yet
    policy = configured_policy(ToolsConfig(deny=("mcp__github__create_issue",)), listed,
                               servers)
    assert policy.deny == ("mcp__GitHub__create_issue",)
    registry = default_registry()
    for name in ("mcp__GitHub__create_issue", "mcp__GitHub__get_issue"):
        registry.register(mcp_tool(name))
    tools = ("mcp__GitHub__create_issue", "mcp__GitHub__get_issue")
    for entry in ("mcp__github", "MCP__GITHUB", "Mcp__gitHub__*"):
        policy = configured_policy(ToolsConfig(deny=(entry,)), registry, servers)
        assert [policy.decision(t) for t in tools] == ["deny", "deny"], entry
    policy = configured_policy(ToolsConfig(allow=("read", "MCP__github__GET_ISSUE")),
                               registry, servers)
    assert [policy.decision(t) for t in tools] == ["deny", "allow"]


def test_a_workspace_server_replaces_yours_whatever_the_case(tmp_path: Path) -> None:
    (tmp_path / "lily.yaml").write_text("mcp_servers:\n  GitHub: {command: theirs}\n")
    (tmp_path / "home" / ".lily").mkdir(parents=True)
    (tmp_path / "home" / ".lily" / "mcp.json").write_text(
        '{"mcpServers": {"github": {"command": "mine"}}}')
    [server] = Workspace.load(tmp_path, environ(tmp_path)).mcp_servers
    assert (server.name, server.origin, server.target) == ("GitHub", "workspace", "theirs")
