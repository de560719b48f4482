"""Tool registry, policy (deny wins, owner-only hidden) and workspace confinement."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from lily_kernel.errors import ToolError
from lily_kernel.tools import (
    Tool,
    ToolContext,
    ToolPolicy,
    ToolRegistry,
    default_registry,
    resolve_in_workspace,
)
from tests.support.gate import run_tool


@dataclass(frozen=True)
class NoArgs:
    pass


async def _secret(args: NoArgs, ctx: ToolContext) -> str:
    return "the secret"


def registry_with_owner_tool() -> ToolRegistry:
    registry = default_registry()
    registry.register(Tool("secret", "Owner only.", NoArgs, _secret, owner_only=True))
    return registry


def test_deny_wins_over_allow_star_and_lists() -> None:
    assert not ToolPolicy(allow="*", deny=("write",)).allows("write")
    assert not ToolPolicy(allow=("write",), deny=("write",)).allows("write")
    assert ToolPolicy(allow=("read",)).allows("read")
    assert not ToolPolicy(allow=("read",)).allows("list")


def test_model_sees_only_allowed_non_owner_tools() -> None:
    registry = registry_with_owner_tool()
    policy = ToolPolicy(allow="*", deny=("write",))
    assert [t.name for t in policy.model_tools(registry)] == ["list", "python", "read",
                                                              "shell"]
    narrowed = policy.model_tools(registry, frozenset({"read", "bash"}))
    # `Bash` keeps the shell, and (its kept_by) Python too
    assert [t.name for t in narrowed] == ["read", "shell"]  # Bash of some commands only


def test_disallowed_tools_narrow_the_other_way() -> None:
    """`disallowed-tools` names refuse what `allowed-tools` names keep: a tool's own name,
    `bash` for a skill's scripts; reading the skill's own files is never refused."""
    policy = ToolPolicy(allow=("read", "list", "read_skill_file", "run_skill_script"))
    offered = policy.model_tools(default_registry(), skill_active=True,
                                 refused=frozenset({"read", "bash", "read_skill_file"}))
    assert [t.name for t in offered] == ["list", "read_skill_file"]
    both = policy.model_tools(default_registry(), frozenset({"read", "list"}),
                              skill_active=True, refused=frozenset({"list"}))
    assert [t.name for t in both] == ["read", "read_skill_file"]


def test_refused_calls_never_run(workspace: Path) -> None:
    registry = registry_with_owner_tool()
    policy = ToolPolicy(allow="*", deny=("write",))
    ctx = ToolContext(workspace)
    denied = run_tool(registry, policy, "write", {"path": "x.txt", "content": "x"}, ctx, "model")
    assert (denied.allowed, denied.error) == (False, True)
    assert denied.output == "Refused: tool 'write' is not allowed by the tool policy."
    assert not (workspace / "x.txt").exists()
    owner = run_tool(registry, policy, "secret", {}, ctx, "model")
    assert owner.allowed is False and "owner-only" in owner.output
    assert "the secret" not in owner.output
    assert run_tool(registry, policy, "secret", {}, ctx, "owner").output == "the secret"
    unknown = run_tool(registry, policy, "nope", {}, ctx, "model")
    assert unknown.output == "Refused: unknown tool 'nope'."


def test_bad_arguments_are_reported_not_raised(workspace: Path) -> None:
    outcome = run_tool(default_registry(), ToolPolicy(), "read", {}, ToolContext(workspace),
                       "model")
    assert outcome.error and outcome.output == "Error: bad arguments: path: required but missing."
    typed = run_tool(default_registry(), ToolPolicy(), "read", {"path": 3},
                     ToolContext(workspace), "model")
    assert typed.output == "Error: bad arguments: path: expected a string (got int)."


def test_file_tools_read_list_write(workspace: Path) -> None:
    registry, policy, ctx = default_registry(), ToolPolicy(), ToolContext(workspace)
    wrote = run_tool(registry, policy, "write", {"path": "notes/a.txt", "content": "hello"},
                     ctx, "model")
    assert wrote.output == "wrote 5 characters to notes/a.txt"
    assert run_tool(registry, policy, "read", {"path": "notes/a.txt"}, ctx, "model").output == "hello"
    listing = run_tool(registry, policy, "list", {"path": "."}, ctx, "model").output
    assert listing == "notes/"


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "a/../../x", "C:/x"])
def test_paths_outside_the_workspace_are_refused(workspace: Path, path: str) -> None:
    with pytest.raises(ToolError):
        resolve_in_workspace(workspace, path)


def test_symlink_escape_is_refused(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    os.symlink(outside, workspace / "link")
    outcome = run_tool(default_registry(), ToolPolicy(), "read", {"path": "link/secret.txt"},
                       ToolContext(workspace), "model")
    assert outcome.error and "outside the workspace" in outcome.output
    assert "secret" not in outcome.output.replace("secret.txt", "")


def test_json_schema_for_the_model() -> None:
    schema = default_registry().get("write").json_schema()  # type: ignore[union-attr]
    assert schema["function"]["name"] == "write"
    parameters = schema["function"]["parameters"]
    assert parameters["required"] == ["path", "content"]
    # The attribute docstrings of the argument dataclass are what the model reads.
    assert parameters["properties"]["content"]["description"] == (
        "The complete new content of the file.")
    listing = default_registry().get("list").json_schema()  # type: ignore[union-attr]
    assert listing["function"]["parameters"]["properties"]["path"]["default"] == "."


@pytest.mark.parametrize(("tool", "install"), [("python", "`%pip install`"),
                                               ("shell", "`pip install`")])
def test_the_code_tools_say_where_the_network_goes(tool: str, install: str) -> None:
    """The sandbox has a way out (the session's proxy, docs/execution.md "Network"): the
    model reads that the network reaches the hosts the person allows, that it may try an
    install, and that a refusal says so."""
    description = default_registry().get(tool).description  # type: ignore[union-attr]
    assert "no network" not in description
    assert "the network reaches only hosts the person allows" in description \
        or "the network only to hosts the person allows" in description
    assert "(another host is asked about, or refused)" in description
    assert f"{install} may be tried: a refusal says so in one line." in description


@pytest.mark.parametrize("path", [".env", ".git/config", "sub/.secret", ".lily/sessions/x.jsonl"])
def test_hidden_paths_are_off_limits(workspace: Path, path: str) -> None:
    (workspace / ".env").write_text("OPENAI_API_KEY=sk-should-never-be-read")
    with pytest.raises(ToolError, match="hidden"):
        resolve_in_workspace(workspace, path)


def test_a_link_to_a_hidden_file_is_refused(workspace: Path) -> None:
    (workspace / ".env").write_text("OPENAI_API_KEY=sk-should-never-be-read")
    os.symlink(workspace / ".env", workspace / "innocent.txt")
    outcome = run_tool(default_registry(), ToolPolicy(), "read", {"path": "innocent.txt"},
                       ToolContext(workspace), "model")
    assert outcome.error and "hidden path" in outcome.output
    assert "sk-should" not in outcome.output


def test_lily_own_files_cannot_be_written(workspace: Path, environ: dict[str, str]) -> None:
    from lily_kernel.environment import Workspace

    (workspace / "lily.yaml").write_text("tools:\n  deny: [write]\n")
    env = Workspace.load(workspace, environ)
    ctx = env.tool_context
    policy = ToolPolicy()  # even with write allowed, these stay protected
    for path in ("lily.yaml", "skills/evil/SKILL.md", "persona/default/SOUL.md"):
        outcome = run_tool(env.registry, policy, "write", {"path": path, "content": "x"},
                           ctx, "model")
        assert outcome.error and "one of Lily's own files" in outcome.output, path
    assert (workspace / "lily.yaml").read_text() == "tools:\n  deny: [write]\n"
    assert not (workspace / "skills").exists() and not (workspace / "persona").exists()
    ok = run_tool(env.registry, policy, "write", {"path": "notes/plan.md", "content": "x"},
                  ctx, "model")
    assert not ok.error


def test_every_configured_root_persona_and_home_is_protected(workspace: Path) -> None:
    """Roots and the Lily home configured inside the workspace (as the golden chat
    workspace does with `home:`) are Lily's own too, also when reached through a link."""
    from lily_kernel.environment import Workspace

    (workspace / "lily.yaml").write_text(
        "home: no-user-home\nskills_bundled_dir: shipped/skills\n"
        "skills_workspace_dir: my-skills\n")
    (workspace / "no-user-home" / "skills").mkdir(parents=True)
    (workspace / "shipped" / "skills").mkdir(parents=True)
    (workspace / "shipped" / "notes").mkdir(parents=True)
    os.symlink("no-user-home", workspace / "alias")
    # Trusted: an untrusted lily.yaml could not move the Lily home (tests/core/test_trust.py).
    env = Workspace.load(workspace, {"PATH": "/usr/bin:/bin", "LILY_TRUST": "workspace"})
    # A link made after the session started still leads to a protected folder.
    os.symlink("shipped/skills", workspace / "late-link")
    for path in ("no-user-home/skills/evil/SKILL.md", "no-user-home/persona/default/SOUL.md",
                 "no-user-home/anything.md", "alias/skills/evil/SKILL.md",
                 "shipped/skills/evil/SKILL.md", "late-link/evil/SKILL.md",
                 "my-skills/evil/SKILL.md", "persona/default/SOUL.md", "lily.yaml"):
        outcome = run_tool(env.registry, ToolPolicy(), "write",
                           {"path": path, "content": "---\nsummary: evil\n---\n"},
                           env.tool_context, "model")
        assert outcome.error and "one of Lily's own files" in outcome.output, path
    written = sorted(str(p.relative_to(workspace)) for p in workspace.rglob("SKILL.md"))
    assert written == [] and not (workspace / "no-user-home" / "anything.md").exists()
    assert not env.load_snapshot(2).skills  # nothing for /reload_skills to pick up
    ok = run_tool(env.registry, ToolPolicy(), "write",
                  {"path": "shipped/notes/plan.md", "content": "x"}, env.tool_context, "model")
    assert not ok.error, ok.output


def test_hidden_lily_folder_is_protected_even_when_configured_elsewhere(tmp_path: Path) -> None:
    from lily_kernel.environment import Workspace

    workspace = tmp_path / "ws"
    (workspace / "persona-link").parent.mkdir(parents=True)
    os.symlink(tmp_path / "ws" / "persona", workspace / "persona-link")
    env = Workspace.load(workspace, {"PATH": "/usr/bin:/bin",
                                           "LILY_HOME": str(tmp_path / "home")})
    protected = {p.resolve() for p in env.tool_context.protected}
    assert (workspace / ".lily").resolve() in protected
    assert (tmp_path / "home").resolve() in protected
    outcome = run_tool(env.registry, ToolPolicy(), "write",
                       {"path": "persona-link/default/SOUL.md", "content": "x"},
                       env.tool_context, "model")
    assert outcome.error and "one of Lily's own files" in outcome.output


@pytest.mark.parametrize("make,path", [
    (lambda w: os.symlink("loop", w / "loop"), "loop/x"),
    (lambda w: None, "bad\x00name"),
    (lambda w: None, "x" * 300),
])
def test_file_system_failures_are_tool_errors(workspace: Path, make, path: str) -> None:  # type: ignore[no-untyped-def]
    make(workspace)
    for tool in ("read", "list"):
        outcome = run_tool(default_registry(), ToolPolicy(), tool, {"path": path},
                           ToolContext(workspace), "model")
        assert outcome.error and outcome.output.startswith("Error: "), (tool, outcome)


def test_list_shows_broken_links_instead_of_failing(workspace: Path) -> None:
    os.symlink("/nonexistent/target", workspace / "dangling")
    os.symlink("loop2", workspace / "loop2")
    (workspace / "real.txt").write_text("abc")
    outcome = run_tool(default_registry(), ToolPolicy(), "list", {"path": "."},
                       ToolContext(workspace), "owner")
    assert outcome.output.splitlines() == ["dangling  (link)", "loop2  (link)",
                                           "real.txt  (3 bytes)"]


def test_read_never_loads_more_than_it_returns(workspace: Path) -> None:
    import tracemalloc

    from lily_kernel.tools.files import MAX_READ_CHARS

    big = workspace / "big.log"
    with big.open("wb") as handle:  # 256 MiB, sparse: cheap on disk, costly if read whole
        handle.truncate(256 * 1024 * 1024)
    read = default_registry().get("read")
    assert read is not None
    args, ctx = read.parse_arguments({"path": "big.log"}), ToolContext(workspace)
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(read.handler(args, ctx))  # the loop's and threads' own setup
        tracemalloc.start()
        try:
            output = loop.run_until_complete(read.handler(args, ctx))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    finally:
        loop.close()
    assert output.endswith(f"[... truncated at {MAX_READ_CHARS:,} characters]")
    assert output.count("\0") == MAX_READ_CHARS
    assert peak < 8 * MAX_READ_CHARS, f"{peak:,} bytes allocated to read 100,000 characters"


def test_an_approval_question_shows_what_happens_first_and_whole() -> None:
    """The path comes first, however long the content; hostile text is made visible;
    a huge value is shortened in the middle with its length; a few lines at most."""
    from lily_kernel.execution.runner import ScriptPlan
    from lily_kernel.tools.questions import call_question, script_question

    question = call_question("write", {"content": "x" * 600, "path": "important/config.py"})
    lines = question.text.splitlines()
    assert lines[:2] == ['Let the model run the tool "write"', '  path: "important/config.py"']
    assert lines[2].endswith('" (600 characters)') and len(lines[2]) < 160
    hostile = call_question("write", {"path": "a\nb\x1b[31m (sandboxed) [y/N]",
                                      "content": "y" * 200_000, "mode": "w", "encoding": "u",
                                      "extra": 1, "more": 2})
    assert '  path: "a\\nb\\x1b[31m (sandboxed) [y/N]"' in hostile.text
    assert "\x1b" not in hostile.text and "(200,000 characters)" in hostile.text
    assert len(hostile.text) < 800 and len(hostile.text.splitlines()) <= 7
    assert "and 2 more argument(s)" in hostile.text
    plan = ScriptPlan(skill="evil", script="scripts/x\n(sandboxed) [y/N].py", sha256="0",
                      arguments=("a" * 5000,), argv=(), cwd=Path("/"), env={},
                      sandboxed=False, sandbox_note="bubblewrap (bwrap) is not installed")
    text = script_question(plan)
    assert text.startswith("NOT sandboxed (bubblewrap (bwrap) is not installed)")
    assert "can change Lily's own skills and settings for later sessions" in text
    assert '"scripts/x\\n(sandboxed) [y/N].py"' in text and "(5,000 characters)" in text
    assert len(text.splitlines()) == 3 and len(text) < 400


def test_characters_that_draw_nothing_or_over_other_text_are_escaped() -> None:
    """Direction marks, zero-width and no-break spaces, combining strike-throughs and
    blank letters cannot make a value look like another in the question."""
    from lily_kernel.tools.questions import shown

    assert shown("evil\u202etxt.py") == '"evil\\u202etxt.py"'
    assert shown("a\u200bb\u00a0c") == '"a\\u200bb\\xa0c"'
    assert shown("rm\u0336 -rf") == '"rm\\u0336 -rf"'
    assert shown("x\u3164y") == '"x\\u3164y"'
    assert shown("plain words, café") == '"plain words, café"'


def test_every_built_in_record_says_what_its_tool_says() -> None:
    """The policy is made from the records (tools/__init__.py BUILT_IN), the tools from
    their modules: each record must say what its tool says of itself."""
    from lily_kernel.tools import BUILT_IN, ToolRecord

    registry = default_registry()
    assert sorted(t.name for t in registry) == sorted(r.name for r in BUILT_IN)
    for record in BUILT_IN:
        tool = registry.get(record.name)
        assert tool is not None and ToolRecord.of(tool, record.made_by) == record


def test_a_record_that_differs_from_its_tool_is_refused() -> None:
    from lily_kernel.tools import ToolRecord

    registry = ToolRegistry(declared=(ToolRecord("read", "lily_kernel.tools.files:file_tools",
                                                 asks_untrusted=True),))
    assert registry.names() == {"read"}
    with pytest.raises(ValueError, match="read: made as"):
        registry.get("read")


def test_the_policy_is_made_without_importing_a_tool_module() -> None:
    """A session's start reads the records only: no tool's module (and its argument
    classes) is imported until a tool is used."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from lily_kernel.config import ToolsConfig\n"
            "from lily_kernel.tools import default_registry\n"
            "from lily_kernel.tools.policy import configured_policy\n"
            "registry = default_registry()\n"
            "policy = configured_policy(ToolsConfig(allow=('shell',)), registry)\n"
            "print(sorted(policy.allowed_names(registry)))\n"
            "print(sorted(m for m in sys.modules if m.startswith('lily_kernel.tools.')))\n"
            "registry.get('shell')\n"
            "print('lily_kernel.tools.shell' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout.splitlines()
    assert out[0] == "['shell']"
    tool_modules = {f"lily_kernel.tools.{m}" for m in (
        "files", "load_skill", "python", "run_view", "scripts", "shell", "skill_files")}
    assert "lily_kernel.tools.registry" in out[1]  # the list is the modules loaded
    assert [m for m in tool_modules if repr(m) in out[1]] == []
    assert out[2] == "True"
