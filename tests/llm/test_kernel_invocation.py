"""Claude-style invocation through a real Lily kernel (jupyter_client over ZeroMQ) and the
loopback OpenAI-compatible server, which records what the model was sent: skills in
~/.claude/skills, where Claude Code keeps them, invoked as a person types them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_skill
from tests.kernel.conftest import LilyProcess, kernel_env, lily_kernel
from tests.support.openai_server import OpenAIServer, Reply, tool_call

ARGSKILL = """\
---
description: Greets someone about something.
argument-hint: <who> [what]
arguments: [who, what]
---
All: $ARGUMENTS
Zero: $0 One: $1 Indexed: $ARGUMENTS[1] Past the end: [$2]
Named: $who about $what
Notes: ${CLAUDE_SKILL_DIR}/notes.md and {baseDir}/notes.md
"""
SKILLS = {
    "argskill": ARGSKILL,
    "plainskill": "---\ndescription: Answers in French.\n---\nAnswer in French.\n",
    "modelonly": ("---\ndescription: Background knowledge about widgets.\nwhen_to_use: When "
                  "widgets come up.\nuser-invocable: false\n---\nWidgets are blue.\n"),
    "help": "---\ndescription: A skill named like a built-in.\n---\nHelp body.\n",
    "planner": "---\ndescription: Plans.\ncommand: review\n---\nPlan it.\n",
    "review": "---\ndescription: Reviews.\n---\nReview it.\n",
    "status": "---\ndescription: Git status.\n---\nThe status: !`git status --short`\n",
    "guarded": "---\ndescription: Lists only.\ndisallowed-tools: Read\n---\nList files.\n",
}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("invocation") / "home"
    for name, text in SKILLS.items():
        write_skill(home / ".claude" / "skills", name, text)
    (home.parent / "workspace").mkdir()
    (home.parent / "workspace" / "notes.txt").write_text("hello\n")
    return home


@pytest.fixture(scope="module")
def kernel(server: OpenAIServer, home: Path) -> Iterator[LilyProcess]:
    settings = {"LILY_MODEL": "openai/invocation", "LILY_API_BASE": server.base_url,
                "OPENAI_API_KEY": "sk-zq7-not-a-real-key", "LILY_STREAM": "0"}
    with lily_kernel(home.parent / "workspace", home, **settings) as running:
        yield running


def folder(home: Path, name: str) -> str:
    return str(home / ".claude" / "skills" / name)


def sent(server: OpenAIServer, code: str, kernel: LilyProcess, *replies: Reply
         ) -> list[dict[str, Any]]:
    """Run `code` with the model's replies scripted; the requests the model received."""
    server.replies.clear()
    server.script(*(replies or (Reply(text="ok"),)))
    before = len(server.requests)
    run = kernel.execute(code, timeout=60)
    assert run.status == "ok", run.reply
    return server.requests[before:]


@pytest.mark.parametrize("code", ['/argskill hello "big world"',
                                  '/skill:argskill hello "big world"',
                                  '/skill argskill hello "big world"'])
def test_the_persons_arguments_fill_the_body(server: OpenAIServer, kernel: LilyProcess,
                                              home: Path, code: str) -> None:
    [request] = sent(server, code, kernel)
    where = folder(home, "argskill")
    assert request["messages"][0]["content"].endswith(
        '# Skill: argskill\n\nAll: hello "big world"\n'
        "Zero: hello One: big world Indexed: big world Past the end: []\n"
        "Named: hello about big world\n"
        f"Notes: {where}/notes.md and {where}/notes.md\n")
    assert request["messages"][-1] == {"role": "user", "content": 'hello "big world"'}


def test_a_body_without_placeholders_is_followed_by_the_request(
        server: OpenAIServer, kernel: LilyProcess) -> None:
    [request] = sent(server, "/plainskill bonjour tout le monde", kernel)
    assert request["messages"][0]["content"].endswith("# Skill: plainskill\n\nAnswer in French.\n")
    assert request["messages"][-1] == {"role": "user", "content": "bonjour tout le monde"}


def test_a_skill_the_model_selects_keeps_its_argument_placeholders(
        server: OpenAIServer, kernel: LilyProcess, home: Path) -> None:
    requests = sent(server, "greet someone", kernel,
                    Reply(tool_calls=[tool_call("load_skill", {"name": "argskill"})]),
                    Reply(text="Hello."))
    loaded = requests[1]["messages"][-1]["content"]
    where = folder(home, "argskill")
    assert "All: $ARGUMENTS\nZero: $0 One: $1 Indexed: $ARGUMENTS[1]" in loaded
    assert f"Notes: {where}/notes.md and {where}/notes.md" in loaded


def test_model_only_skill_is_refused_on_slash_but_in_the_catalog(
        server: OpenAIServer, kernel: LilyProcess) -> None:
    for code in ("/modelonly widgets", "/skill:modelonly", "/skill modelonly x"):
        run = kernel.execute(code)
        assert run.status == "error"
        assert run.reply["evalue"] == ("Error: skill 'modelonly' is for the model only "
                                       "(user-invocable: false); no / command invokes it.")
    assert kernel.execute("/nothing_here").reply["evalue"] == (
        "Error: unknown command /nothing_here.")
    [request] = sent(server, "tell me about widgets", kernel)
    assert ("- modelonly: Background knowledge about widgets. When to use: When widgets "
            "come up.\n") in request["messages"][0]["content"]


def test_builtins_and_aliases_win(server: OpenAIServer, kernel: LilyProcess) -> None:
    run = kernel.execute("/help")
    assert run.status == "ok" and "Lily commands" in run.plain
    [request] = sent(server, "/review this", kernel)
    assert request["messages"][0]["content"].endswith("# Skill: planner\n\nPlan it.\n")


def test_disallowed_tools_are_refused_while_the_skill_is_active(
        server: OpenAIServer, kernel: LilyProcess) -> None:
    requests = sent(server, "/guarded what is here?", kernel,
                    Reply(tool_calls=[tool_call("read", {"path": "notes.txt"})]),
                    Reply(text="I may not read it."))
    offered = {t["function"]["name"] for t in requests[0]["tools"]}
    assert "read" not in offered and "list" in offered
    assert requests[1]["messages"][-1]["content"] == (
        "Refused: tool 'read' is not available while the active skill narrows the tools.")


def test_argument_hint_in_completion_and_help(kernel: LilyProcess) -> None:
    reply = kernel.request("complete", "/args", 5)
    assert reply["matches"] == ["/argskill"]
    assert reply["metadata"]["_jupyter_types_experimental"] == [
        {"start": 0, "end": 5, "text": "/argskill", "type": "skill <who> [what]"}]
    forms = kernel.request("complete", "/skill:a", 8)
    assert forms["matches"] == ["/skill:argskill"]
    assert "/modelonly" not in kernel.request("complete", "/", 1)["matches"]
    plain = kernel.execute("/help").plain
    assert "/argskill <who> [what]" in plain
    assert ("A SKILL.md's !`command` lines (Claude Code's dynamic context) are never run "
            "by Lily: the model sees them as text.") in plain


def test_lily_skills_json_has_the_warnings(home: Path) -> None:
    env = {**kernel_env(home), "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-m", "lily_kernel.cli.main", "skills", "--json",
         "--workspace", str(home.parent / "workspace")],
        capture_output=True, text=True, env=env, timeout=60, check=True)
    warnings = {(d["skill"], d["reason"]) for d in json.loads(done.stdout)["diagnostics"]
                if d["kind"] == "warning"}
    assert warnings == {
        ("help", "/help is the built-in command; invoke this skill with /skill help"),
        ("review", "/review is the alias of the skill 'planner' (command: review), which "
                   "wins; invoke 'review' with /skill review"),
        ("status", "1 Claude Code dynamic context command(s), e.g. !`git status --short`: "
                   "!`command` lines are not run by Lily; the model sees them as text"),
    }
