"""Configuration: lily.yaml + LILY_* variables, validated with clear errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lily_kernel.config import load_config
from lily_kernel.errors import ConfigError


def test_defaults_without_file_or_env(workspace: Path) -> None:
    config = load_config(workspace, {})
    assert (config.llm.model, config.llm.stream, config.tools.allow, config.tools.deny) == (
        None, True, ("*",), ())


def test_file_values_and_env_precedence(workspace: Path) -> None:
    (workspace / "lily.yaml").write_text(
        "model: openai/from-file\ntemperature: 0.2\ntools:\n  deny: [write]\n"
        "skills_user_dir: my-skills\n")
    config = load_config(workspace, {"LILY_MODEL": "openai/from-env", "LILY_STREAM": "0",
                                     "LILY_TOOLS_ALLOW": "read, list"})
    assert config.llm.model == "openai/from-env"
    assert config.llm.temperature == 0.2
    assert config.llm.stream is False
    assert (config.tools.allow, config.tools.deny) == (("read", "list"), ("write",))
    assert config.skills_user_dir == workspace / "my-skills"


def test_unknown_key_names_file_and_key(workspace: Path) -> None:
    (workspace / "lily.yaml").write_text("modle: gpt\n")
    with pytest.raises(ConfigError) as err:
        load_config(workspace, {})
    assert str(err.value) == f"{workspace / 'lily.yaml'}: key 'modle': unknown key."


def test_bad_value_names_file_key_and_problem(workspace: Path) -> None:
    (workspace / "lily.yaml").write_text("temperature: hot\n")
    with pytest.raises(ConfigError) as err:
        load_config(workspace, {})
    assert str(err.value) == (f"{workspace / 'lily.yaml'}: key 'temperature': expected a "
                              "number (got str).")
    (workspace / "lily.yaml").write_text("temperature: 3\nretries: 1\n")
    with pytest.raises(ConfigError, match=r"key 'temperature': expected a value of at most 2 "):
        load_config(workspace, {})


def test_bad_env_value_names_the_variable(workspace: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(workspace, {"LILY_RETRIES": "many"})
    assert str(err.value) == "LILY_RETRIES: key 'retries': expected an integer (got 'many')."


def test_env_text_converts_to_each_key_type(workspace: Path) -> None:
    config = load_config(workspace, {"LILY_RETRIES": "3", "LILY_TEMPERATURE": "0.5",
                                     "LILY_EVENT_LOG": "off", "LILY_MODEL": "  ",
                                     "LILY_HOME": "~/lily-home"})
    assert (config.llm.retries, config.llm.temperature, config.event_log) == (3, 0.5, False)
    assert config.llm.model is None  # blank is unset
    assert config.home == Path("~/lily-home").expanduser()


def test_nested_unknown_key_and_wrong_item_type(workspace: Path) -> None:
    (workspace / "lily.yaml").write_text("tools:\n  alow: [read]\n")
    with pytest.raises(ConfigError, match=r"key 'tools\.alow': unknown key\.$"):
        load_config(workspace, {})
    (workspace / "lily.yaml").write_text("tools:\n  deny: [read, 3]\n")
    with pytest.raises(ConfigError, match=r"key 'tools\.deny\.1': expected a string \(got int\)"):
        load_config(workspace, {})


def test_invalid_yaml_and_non_mapping(workspace: Path) -> None:
    (workspace / "lily.yaml").write_text("model: [oops\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_config(workspace, {})
    (workspace / "lily.yaml").write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_config(workspace, {})


def test_unknown_agent_in_config_is_a_clear_error(workspace: Path, environ: dict[str, str]) -> None:
    from lily_kernel.runtime import LilyRuntime

    (workspace / "lily.yaml").write_text("agent: ghost\n")
    with pytest.raises(ConfigError) as err:
        LilyRuntime.start(workspace, environ)
    assert str(err.value) == ("key 'agent' (lily.yaml or LILY_AGENT): no agent named 'ghost'; "
                              "available: default.")


def test_policy_names_match_tools_case_insensitively(workspace: Path,
                                                     environ: dict[str, str]) -> None:
    from lily_kernel.environment import Workspace

    (workspace / "lily.yaml").write_text("tools:\n  allow: [Read, LIST]\n  deny: [Write]\n")
    env = Workspace.load(workspace, environ)
    assert (env.policy.allow, env.policy.deny) == (("read", "list"), ("write",))
    assert [t.name for t in env.policy.model_tools(env.registry)] == ["list", "read"]


def test_an_unknown_tool_in_the_policy_is_a_clear_error(workspace: Path,
                                                        environ: dict[str, str]) -> None:
    from lily_kernel.environment import Workspace

    (workspace / "lily.yaml").write_text("tools:\n  deny: [wirte]\n")
    with pytest.raises(ConfigError) as err:
        Workspace.load(workspace, environ)
    assert str(err.value) == ("key 'tools.deny' (lily.yaml or LILY_TOOLS_DENY): unknown tool "
                              "'wirte'; the tools are: list, python, read, read_skill_file, "
                              "run_skill_script, shell, write.")


@pytest.mark.parametrize(("written", "listed"), [
    ('allow: ["*"]', "allow: *"), ('allow: "*"', "allow: *"), ("allow: ['*', python]",
                                                               "allow: *, python"),
    ("ask: shell", "ask: shell"), ("ask: [shell]", "ask: shell"), ('ask: "shell, write"',
                                                                   "ask: shell, write"),
    ('deny: "*"', "deny: *"), ('deny: ["*"]', "deny: *"), ("deny: write", "deny: write"),
])
def test_a_tools_key_reads_one_way_as_a_list_or_one_string(
        workspace: Path, environ: dict[str, str], written: str, listed: str) -> None:
    """A downloaded folder written `allow: ["*"]` stopped every cell (`unknown tool
    '*'`) while `allow: "*"` worked, and `ask: shell` was refused: a list key reads one
    string as its variable does (names by commas, `*` every tool), in any of the three."""
    from lily_kernel.environment import Workspace

    (workspace / "lily.yaml").write_text(f"tools:\n  {written}\n")
    policy = Workspace.load(workspace, environ).policy
    key, names = listed.split(": ")
    assert ", ".join(getattr(policy, key)) == names
    from_variable = Workspace.load(workspace, {**environ, f"LILY_TOOLS_{key.upper()}":
                                                     names}).policy
    assert getattr(from_variable, key) == getattr(policy, key)


def test_a_star_means_every_tool_in_allow_ask_and_deny(workspace: Path,
                                                       environ: dict[str, str]) -> None:
    """`*` is every tool but `run_skill_script`, which must be named to run; in `deny`,
    every tool; beside it, a name still counts (`allow: ['*', python]`: python unasked)."""
    from lily_kernel.environment import Workspace

    def decisions(tools: str) -> dict[str, str]:
        (workspace / "lily.yaml").write_text(f"tools: {tools}\n")
        env = Workspace.load(workspace, environ)
        return {t.name: env.policy.decision(t.name) for t in env.registry if t.governed}

    every = decisions("{allow: ['*', python]}")
    assert (every["read"], every["python"], every["shell"], every["run_skill_script"]) == (
        "allow", "allow", "ask", "deny")
    asked = decisions("{ask: ['*']}")
    assert set(asked.values()) == {"ask", "deny"} and asked["run_skill_script"] == "deny"
    asked = decisions("{ask: ['*'], allow: [run_skill_script]}")
    assert set(asked.values()) == {"ask"}
    assert set(decisions("{deny: '*', allow: [run_skill_script]}").values()) == {"deny"}


def test_the_other_list_keys_read_one_string_as_their_variable(workspace: Path) -> None:
    (workspace / "lily.yaml").write_text("script_env: 'A, B'\nskills_extra_dirs: extra\n")
    config = load_config(workspace, {})
    assert config.script_env == ("A", "B")
    assert config.skills_extra_dirs == (str(workspace / "extra"),)
    assert load_config(workspace, {"LILY_SCRIPT_ENV": "A,B"}).script_env == ("A", "B")


@pytest.mark.parametrize(("make", "said"), [
    (lambda p: p.mkdir(), "it is a folder"),
    (lambda p: os.symlink("missing.yaml", p), "it is a link that leads nowhere"),
    (lambda p: os.mkfifo(p), "it is not a regular file"),
])
def test_a_lily_yaml_that_is_no_file_is_reported_not_ignored(workspace: Path, make,
                                                             said: str) -> None:  # type: ignore[no-untyped-def]
    make(workspace / "lily.yaml")
    with pytest.raises(ConfigError) as err:
        load_config(workspace, {})
    assert str(err.value) == f"{workspace / 'lily.yaml'}: cannot read the file ({said})."


@pytest.mark.parametrize("var", ["LILY_HOME", "LILY_SKILLS_USER_DIR", "LILY_SKILLS_BUNDLED_DIR",
                                 "LILY_SKILLS_EXTRA_DIRS"])
@pytest.mark.parametrize("value", [".lily", ".", "team-skills", "/abs/ok:team-skills"])
def test_a_persons_folder_variable_must_be_absolute(workspace: Path, var: str,
                                                    value: str) -> None:
    """Resolved against each notebook's folder, `LILY_HOME=.lily` made a downloaded
    folder's own `.lily/trust.json` the trust store (it trusted itself), and
    `LILY_SKILLS_EXTRA_DIRS=team-skills` made its `team-skills/` a root of the person's."""
    if ":" in value and var != "LILY_SKILLS_EXTRA_DIRS":
        return
    with pytest.raises(ConfigError, match=rf"^{var}: key '[a-z_]+': expected an absolute path"):
        load_config(workspace, {var: value})
    load_config(workspace, {"LILY_SKILLS_WORKSPACE_DIR": "agent-skills", var: "~/x"})
