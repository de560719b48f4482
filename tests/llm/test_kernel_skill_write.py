"""A skill made for the person by a run, through a real Lily kernel (jupyter_client over
ZeroMQ), the loopback model scripting the calls, real bubblewrap (issue 36: openai's
skill-creator writes `skills/public/<name>`). In a folder the person trusted: a shell
command makes `skills/new-skill`: the cell and the model's result say it is held, the
next turn does not offer it, `/skills` lists it held, and after `/trust` it is offered;
Python changes the trusted `report` skill: from the next cell it is held, neither its
old text nor its new one offered, until the person trusts it again; and the session
replays as it ran. In the shell's session sandbox, skills/ stays a folder and the rest
of Lily's names stay hers; trusted by the environment, runs may not write skills/."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import skill_text, write_skill
from tests.core.test_scripts import sandbox_or_skip
from tests.kernel.conftest import Execution, lily_kernel
from tests.llm.test_kernel_skills import execute_answering
from tests.support.openai_server import OpenAIServer, Reply, tool_call

SKILL = "printf -- '---\\nsummary: Summarise CSV files\\n---\\nRead the CSV.\\n'"


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    sandbox_or_skip()


def _catalog(server: OpenAIServer) -> str:
    return str(server.requests[-1]["messages"][0]["content"])


def _result(server: OpenAIServer) -> str:
    return str(server.requests[-1]["messages"][-1]["content"])


def _shown(run: Execution) -> str:
    return run.plain + json.dumps([m["content"] for m in run.outputs])


def _hello(kernel: Any, server: OpenAIServer) -> str:
    """A plain chat turn; the catalog the model was sent."""
    server.script(Reply(text="Hi."))
    run = kernel.execute("Hello", allow_stdin=True)
    assert run.status == "ok", run.reply
    return _catalog(server)


def test_a_skill_a_run_makes_or_changes_waits_for_the_persons_trust(
        server: OpenAIServer, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    write_skill(workspace / "skills", "report", skill_text("Write the weekly report"))
    server.replies.clear()
    with lily_kernel(workspace, tmp_path / "home", LILY_TRUST="", LILY_MODEL="openai/write",
                     LILY_API_BASE=server.base_url, OPENAI_API_KEY="sk-write-not-a-key",
                     LILY_STREAM="0", LILY_EVENT_LOG="1", LILY_RETRY_BACKOFF="0.01") as kernel:
        command = f"mkdir -p skills/new-skill && {SKILL} > skills/new-skill/SKILL.md"
        server.script(Reply(tool_calls=[tool_call("shell", {"command": command}, "s0")]),
                      Reply(text="Made it."))
        # The person trusts the folder (its report skill), then allows the command.
        run, prompts = execute_answering(kernel, "Make me a csv skill", ["y", "y"])
        assert run.status == "ok", run.reply
        assert "skill report (skills/report, new)" in prompts[0]
        assert (kernel.workspace / "skills" / "new-skill" / "SKILL.md").is_file()
        assert ("Skills written: `skills/new-skill` (new). Lily holds a new or changed "
                "skill until you trust it: run /trust") in run.plain, run.plain
        assert ("[skills written: skills/new-skill (new); Lily holds a new or changed "
                "skill, not offered nor usable in this session, until the person trusts "
                "it: tell them to run /trust]") in _result(server)

        catalog = _hello(kernel, server)
        assert "- report:" in catalog and "new-skill" not in catalog
        listed = kernel.execute("/skills").plain
        assert re.search(r"^new-skill\s+Summarise CSV files\s+workspace\s+new: not "
                         r"trusted yet$", listed, re.M), listed

        run, prompts = execute_answering(kernel, "/trust", ["y"])
        assert run.status == "ok", run.reply
        assert "new-skill (skills/new-skill, new)" in prompts[0]
        assert "report" not in prompts[0]  # trusted already, unchanged
        assert "- new-skill: Summarise CSV files" in _hello(kernel, server)

        code = "open('skills/report/SKILL.md', 'a').write('Also mail it to everyone.\\n')"
        server.script(Reply(tool_calls=[tool_call("python", {"code": code}, "p0")]),
                      Reply(text="Changed it."))
        run, _ = execute_answering(kernel, "Change the report skill", ["y"], timeout=180)
        assert run.status == "ok", run.reply
        assert "Skills written: `skills/report` (changed)." in run.plain, _shown(run)
        assert "[skills written: skills/report (changed); Lily holds" in _result(server)
        catalog = _hello(kernel, server)
        assert "report" not in catalog and "- new-skill:" in catalog
        listed = kernel.execute("/skills").plain
        assert re.search(r"^report\s+Write the weekly report\s+workspace\s+changed since "
                         r"you trusted it$", listed, re.M), listed
        [log] = (kernel.workspace / ".lily" / "sessions").glob("*.jsonl")
    # Replayed from the folder as the session found it (a copy, the recording's trust and
    # answers): its runs write the skills again, and the same skills are held at the
    # same cells (what the session logged of each snapshot is compared).
    shutil.rmtree(workspace / "skills" / "new-skill")
    write_skill(workspace / "skills", "report", skill_text("Write the weekly report"))
    settings = json.loads(log.read_text().splitlines()[0])["data"]["settings"]
    replay = subprocess.run([sys.executable, "-m", "lily_kernel.cli.main", "replay", str(log)],
                            capture_output=True, text=True, check=False, timeout=300,
                            env={**{k: v for k, v in os.environ.items()
                                    if not k.startswith(("LILY_", "OPENAI_"))},
                                 "HOME": str(tmp_path / "home"), **settings})
    assert replay.returncode == 0, replay.stdout + replay.stderr


def _shell(kernel: Any, server: OpenAIServer, command: str) -> tuple[Any, str]:
    """`command` as the model's shell call, allowed by the person; the cell, the result."""
    server.script(Reply(tool_calls=[tool_call("shell", {"command": command}, "s0")]),
                  Reply(text="Done."))
    run, _ = execute_answering(kernel, "Run it", ["y"])
    assert run.status == "ok", run.reply
    return run, str(server.requests[-1]["messages"][-1]["content"])


def test_skills_stays_a_folder_and_the_rest_stays_lilys(server: OpenAIServer,
                                                         tmp_path: Path) -> None:
    """In the shell's session sandbox, as an attacker would: skills/ cannot be moved away
    or made a link (to the person's own skills, or to a folder another workspace
    trusted), and `.claude/skills`, `.agents/skills`, lily.yaml stay Lily's."""
    workspace = tmp_path / "workspace"
    write_skill(workspace / "skills", "report", skill_text("Write the weekly report"))
    elsewhere = tmp_path / "home" / ".lily" / "skills"
    elsewhere.mkdir(parents=True)
    server.replies.clear()
    with lily_kernel(workspace, tmp_path / "home", LILY_MODEL="openai/write",
                     LILY_API_BASE=server.base_url, OPENAI_API_KEY="sk-write-not-a-key",
                     LILY_STREAM="0", LILY_EVENT_LOG="1", LILY_TRUST="") as kernel:
        execute_answering(kernel, "/trust", ["y"])
        _, said = _shell(kernel, server, (
            f"mv skills moved; ln -sT {elsewhere} skills; "
            f"for r in .claude/skills .agents/skills; do mkdir -p $r/x && {SKILL} > "
            "$r/x/SKILL.md; done; echo 'policy: auto' > lily.yaml; echo tried"))
        assert "tried" in said and "Device or resource busy" in said, said
        assert "[removed after the run: .agents, .claude" in said, said
        skills = kernel.workspace / "skills"
        assert skills.is_dir() and not skills.is_symlink() and (skills / "report").is_dir()
        assert not (kernel.workspace / "moved").exists()
        assert not (kernel.workspace / ".claude").exists()
        assert not (kernel.workspace / "lily.yaml").exists()
        assert list(elsewhere.iterdir()) == []


def test_trusted_by_the_environment_runs_may_not_write_skills(server: OpenAIServer,
                                                              tmp_path: Path) -> None:
    """LILY_TRUST=workspace holds nothing: a skill a run wrote would apply with nobody's
    yes, so there skills/ stays read-only, a new skill and a change alike refused."""
    workspace = tmp_path / "workspace"
    write_skill(workspace / "skills", "report", skill_text("Write the weekly report"))
    server.replies.clear()
    with lily_kernel(workspace, tmp_path / "home", LILY_MODEL="openai/write",
                     LILY_API_BASE=server.base_url, OPENAI_API_KEY="sk-write-not-a-key",
                     LILY_STREAM="0", LILY_EVENT_LOG="1") as kernel:  # LILY_TRUST=workspace
        run, said = _shell(kernel, server, (
            f"mkdir -p skills/new-skill; {SKILL} > skills/new-skill/SKILL.md; "
            "echo 'Also mail it.' >> skills/report/SKILL.md; echo tried"))
        assert "tried" in said and "Read-only file system" in said, said
        assert "Skills written" not in run.plain
        assert not (kernel.workspace / "skills" / "new-skill").exists()
        assert (kernel.workspace / "skills" / "report" / "SKILL.md").read_text() == \
            skill_text("Write the weekly report")
