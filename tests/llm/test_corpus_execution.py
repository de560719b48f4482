"""A real corpus skill followed end to end: getsentry's `claude-settings-audit` (the
upstream SKILL.md, see tests/fixtures/upstream/getsentry-skills) forced with `/skill`, its
read-only commands run by the scripted model through the `shell` tool in real
bubblewrap, each asked and answered yes through the input request, in a real Lily kernel
over ZeroMQ. The commands are taken from the SKILL.md itself, as a model would take them.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from tests.core.test_scripts import sandbox_or_skip
from tests.kernel.conftest import lily_kernel
from tests.llm.test_kernel_skills import execute_answering, log_events
from tests.support.openai_server import OpenAIServer, Reply, tool_call

SKILL = FIXTURES / "upstream" / "getsentry-skills" / "claude-settings-audit"
# The repository the person asks about: a Python project locked with uv, built with
# make, with Claude settings of its own.
PROJECT = {
    "pyproject.toml": '[project]\nname = "demo"\nversion = "0.1.0"\n',
    "uv.lock": "version = 1\n",
    "Makefile": "test:\n\tpytest\n",
    ".claude/settings.json": json.dumps({"permissions": {"allow": ["Bash(ls:*)"]}}),
    "src/demo/__init__.py": "",
}
# The indicator files of the skill's Phase 1 table that the scripted model looks for.
INDICATORS = ("pyproject.toml", "uv.lock", "poetry.lock", "package.json", "Makefile",
              "Dockerfile")


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    sandbox_or_skip()


def summarize(body: dict[str, Any]) -> Reply:
    """The scripted model's last step, the skill's "Summary Table": the indicator files
    found in the command output it was sent (so the answer holds what the sandbox saw)."""
    sent = "\n".join(str(m["content"]) for m in body["messages"] if m["role"] == "tool")
    found = [name for name in INDICATORS if f"./{name}" in sent.splitlines()]
    return Reply(text="## Detected Tech Stack\n\n" + ", ".join(found))


def skill_commands(text: str) -> list[str]:
    """The commands of the skill's Phase 1 and Phase 3 `bash` blocks, one per line:
    what it tells the agent to run to detect the stack and read the existing settings."""
    phases = {m.group(1): m.group(2) for m in re.finditer(
        r"^## (Phase \d)[^\n]*\n(.*?)(?=^## )", text, re.S | re.M)}
    return [line for phase in ("Phase 1", "Phase 3")
            for block in re.findall(r"```bash\n(.*?)```", phases[phase], re.S)
            for line in block.splitlines() if line.strip()]


def test_the_scripted_model_follows_a_real_skill_through_the_sandboxed_shell(
        tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    for name, text in PROJECT.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
    home = tmp_path / "home"
    shutil.copytree(SKILL, home / ".lily" / "skills" / SKILL.name)
    commands = skill_commands((SKILL / "SKILL.md").read_text())
    assert commands[0] == "ls -la" and commands[1].startswith("find . -maxdepth 2")
    assert commands[2].startswith("cat .claude/settings.json")
    server = OpenAIServer(default=summarize)  # serves once entered, below
    server.script(*(Reply(tool_calls=[tool_call("shell", {"command": c}, f"s{i}")])
                    for i, c in enumerate(commands)))
    settings = {"LILY_MODEL": "openai/corpus-execution", "LILY_API_BASE": server.base_url,
                "OPENAI_API_KEY": "sk-zq81vw4kf-not-a-key", "LILY_STREAM": "0",
                "LILY_EVENT_LOG": "1", "LILY_RETRY_BACKOFF": "0.01"}
    with server, lily_kernel(workspace, home, **settings) as kernel:
        run, prompts = execute_answering(
            kernel, "/skill claude-settings-audit Audit this repository's Claude settings",
            ["y"] * len(commands))
        assert run.status == "ok", run.reply
        invoked = log_events(kernel, "skill_invoked")
        approvals = log_events(kernel, "approval")
        runs = log_events(kernel, "code_run")

    # The model was given the skill's instructions, forced by /skill.
    first = server.requests[-len(commands) - 1]
    system = "\n".join(str(m["content"]) for m in first["messages"] if m["role"] == "system")
    assert "# Claude Settings Audit" in system and "## Phase 1: Detect Tech Stack" in system
    # Each command was asked, shown whole, before it ran.
    assert len(prompts) == len(commands)
    for prompt, command in zip(prompts, commands, strict=True):
        assert prompt.startswith("Sandboxed (network only to hosts you allow; only the workspace")
        assert json.dumps(command) in prompt and prompt.endswith("Run it? [y/N/a] ")
    # What the commands found reached the model, each in the request after its call.
    results = [str(r["messages"][-1]["content"]) for r in server.requests[-len(commands):]]
    listing, found, existing = results
    assert listing.startswith("[exit code 0]\n") and "pyproject.toml" in listing
    assert found.startswith("[exit code 0]\n")
    assert {"./pyproject.toml", "./uv.lock", "./Makefile", "./.claude/settings.json"} <= set(
        found.splitlines())
    assert existing == f"[exit code 0]\n{PROJECT['.claude/settings.json']}"
    # The person saw each run and the answer.
    notices = [line for line in run.plain.splitlines() if line.startswith("Shell ")]
    assert len(notices) == len(commands)
    for notice, command in zip(notices, commands, strict=True):  # a long one cut short
        assert notice.startswith(f"Shell {json.dumps(command)[:20]}")
        assert notice.endswith(": exit code 0 (sandboxed)")
    assert run.displays[-1]["text/plain"].startswith(
        "## Detected Tech Stack\n\npyproject.toml, uv.lock, Makefile\n")
    # The log: the skill forced by the person, three approvals, three runs by the model.
    assert [(e["name"], e["mode"]) for e in invoked] == [("claude-settings-audit", "manual")]
    assert [(a["tool"], a["outcome"]) for a in approvals] == [("shell", "approved")] * 3
    assert [(r["tool"], r["caller"], r["code"], r["status"], r["exit_code"]) for r in runs] == [
        ("shell", "model", c, "ok", 0) for c in commands]
    # Read-only, as the skill says: the project is as it was.
    for name, text in PROJECT.items():
        assert (workspace / name).read_text() == text
