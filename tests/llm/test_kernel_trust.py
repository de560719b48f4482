"""Trust in the notebook, through a real Lily kernel (jupyter_client over ZeroMQ) and the
loopback model: the first chat cell in an untrusted workspace asks through the input
request; yes, no and no stdin; an untrusted lily.yaml that allows run_skill_script lets
no script run; a session that trusted replays as identical (the store untouched)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES, skill_text, write_skill
from tests.kernel.conftest import lily_kernel
from tests.llm.test_kernel_skills import execute_answering, log_events
from tests.support.openai_server import OpenAIServer, Reply, tool_call


def untrusted(server: OpenAIServer, root: Path) -> Any:
    """A downloaded folder with a skill, opened by a person who has not trusted it."""
    workspace = root / "workspace"
    write_skill(workspace / "skills", "report", skill_text("Write the weekly report"))
    return lily_kernel(workspace, root / "home", LILY_TRUST="", LILY_MODEL="openai/trust",
                       LILY_API_BASE=server.base_url, OPENAI_API_KEY="sk-trust-not-a-key",
                       LILY_STREAM="0", LILY_EVENT_LOG="1", LILY_RETRY_BACKOFF="0.01")


def system_prompt(server: OpenAIServer) -> str:
    return str(server.requests[-1]["messages"][0]["content"])


def test_yes_trusts_the_workspace_and_the_session_replays(server: OpenAIServer,
                                                          tmp_path: Path) -> None:
    server.replies.clear()
    server.script(Reply(text="Noted."), Reply(text="Again."))
    with untrusted(server, tmp_path) as kernel:
        run, prompts = execute_answering(kernel, "Hello", ["y"])
        assert run.reply["status"] == "ok"
        [prompt] = prompts
        assert f"This workspace is not trusted: {kernel.workspace}" in prompt
        assert "skill report (skills/report, new)" in prompt
        assert "- report:" in system_prompt(server)  # in the catalog once trusted
        again = kernel.execute("Hello again", allow_stdin=True)
        assert again.status == "ok"  # asked once: no second question
        [decided] = log_events(kernel, "trust_decided")
        assert decided["outcome"] == "approved"
        [log] = (kernel.workspace / ".lily" / "sessions").glob("*.jsonl")
    store = tmp_path / "home" / ".lily" / "trust.json"
    trusted = json.loads(store.read_text())["workspaces"][str(kernel.workspace)]
    assert list(trusted["skills"]) == ["skills/report"]
    before = store.read_bytes()
    # Replay runs with the machine's settings (compared with the recorded ones, never
    # taken from the log): the shell the kernel ran in, without its key.
    settings = json.loads(log.read_text().splitlines()[0])["data"]["settings"]
    replay = subprocess.run([sys.executable, "-m", "lily_kernel.cli.main", "replay", str(log)],
                            capture_output=True, text=True, check=False, timeout=120,
                            env={**{k: v for k, v in os.environ.items()
                                    if not k.startswith(("LILY_", "OPENAI_"))},
                                 "HOME": str(tmp_path / "home"), **settings})
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert store.read_bytes() == before


def test_no_holds_the_skills_for_the_session(server: OpenAIServer, tmp_path: Path) -> None:
    server.replies.clear()
    server.script(Reply(text="Noted."), Reply(text="Again."))
    with untrusted(server, tmp_path) as kernel:
        run, _ = execute_answering(kernel, "Hello", ["n"])
        assert run.reply["status"] == "ok"
        assert "Held for this session" in run.plain + json.dumps([m["content"] for m in run.outputs])
        assert "report" not in system_prompt(server)
        again = kernel.execute("Hello again", allow_stdin=True)
        assert again.status == "ok" and "report" not in system_prompt(server)
        skills = kernel.execute("/skills")
        assert "1 held until you trust this folder" in skills.plain
        assert re.search(r"^report\s+Write the weekly report\s+workspace\s+new: not "
                         r"trusted yet$", skills.plain, re.M), skills.plain
    assert not (tmp_path / "home" / ".lily" / "trust.json").exists()


def test_without_stdin_the_cell_says_how_to_trust(server: OpenAIServer,
                                                  tmp_path: Path) -> None:
    server.replies.clear()
    server.script(Reply(text="Noted."))
    with untrusted(server, tmp_path) as kernel:
        run = kernel.execute("Hello", allow_stdin=False)
        assert run.status == "ok"
        shown = run.plain + json.dumps([m["content"] for m in run.outputs])
        assert f"lily trust {kernel.workspace}" in shown and "LILY_TRUST=workspace" in shown
        assert "report" not in system_prompt(server)
        [decided] = log_events(kernel, "trust_decided")
        assert decided["outcome"] == "unanswerable"


def script_workspace(server: OpenAIServer, root: Path, config: str, args: list[str],
                     answer: str) -> Any:
    """A workspace whose lily.yaml says `config`, the person's own formfill skill, and a
    model that loads it and runs its script with `args`; a kernel of a person who has
    not trusted the workspace."""
    workspace, home = root / "workspace", root / "home"
    workspace.mkdir()
    (workspace / "lily.yaml").write_text(config)
    shutil.copytree(FIXTURES / "skill_files" / "formfill", home / ".lily" / "skills" / "formfill")
    server.replies.clear()
    server.script(
        Reply(tool_calls=[tool_call("load_skill", {"name": "formfill"})]),
        Reply(tool_calls=[tool_call("run_skill_script",
                                    {"script": "scripts/fill_form.py", "args": args})]),
        Reply(text=answer))
    return lily_kernel(workspace, home, LILY_TRUST="", LILY_MODEL="openai/trust",
                       LILY_API_BASE=server.base_url, OPENAI_API_KEY="sk-trust-not-a-key",
                       LILY_STREAM="0", LILY_EVENT_LOG="1")


def test_an_untrusted_lily_yaml_that_allows_scripts_runs_none(server: OpenAIServer,
                                                              tmp_path: Path) -> None:
    with script_workspace(server, tmp_path, "tools:\n  allow: [run_skill_script]\n",
                          ["Ada"], "Could not.") as kernel:
        run = kernel.execute("Fill my form", allow_stdin=False)
        assert run.status == "ok"
        assert str(server.requests[-1]["messages"][-1]["content"]).startswith("Refused")
        assert log_events(kernel, "skill_script_run") == []
        helped = kernel.execute("/help")
        assert "run_skill_script would be 'allow', stays 'deny'" in helped.plain


def test_yes_takes_up_the_settings_in_the_same_session(server: OpenAIServer,
                                                       tmp_path: Path) -> None:
    """Trusted in the notebook, lily.yaml applies whole at once: the policy it sets
    (scripts allowed by name) lets the model run a script in that very cell."""
    with script_workspace(server, tmp_path, "tools:\n  allow: [run_skill_script, read]\n",
                          ["Ada", "2024-05-01"], "Filled.") as kernel:
        run, prompts = execute_answering(kernel, "Fill my form", ["y"])
        assert run.reply["status"] == "ok"
        [prompt] = prompts  # the trust question only: the script then runs unasked
        assert "lily.yaml tools: run_skill_script would be 'allow', stays 'deny'" in prompt
        assert [e["outcome"] for e in log_events(kernel, "skill_script_run")] == ["ran"]


def test_after_no_slash_trust_asks_again_and_yes_takes_it_all_up(server: OpenAIServer,
                                                                  tmp_path: Path) -> None:
    """The newcomer's way back after "n": `/trust` in the notebook (the advice `lily
    trust …` failed in JupyterLab's terminal: `lily` not on its PATH)."""
    server.replies.clear()
    server.script(Reply(text="Noted."), Reply(text="Now with skills."))
    with untrusted(server, tmp_path) as kernel:
        run, _ = execute_answering(kernel, "Hello", ["n"])
        assert run.reply["status"] == "ok"
        assert "`/trust`" in run.plain or "/trust" in json.dumps(
            [m["content"] for m in run.outputs])
        again, prompts = execute_answering(kernel, "/trust", ["y"])
        assert again.reply["status"] == "ok"
        assert again.plain.count("Trusted ") == 1, again.plain  # said once, not twice
        [prompt] = prompts
        assert "skill report (skills/report, new)" in prompt
        kernel.execute("Hello again", allow_stdin=True)
        assert "- report:" in system_prompt(server)
        settled = kernel.execute("/trust", allow_stdin=True)
        assert settled.status == "ok" and "This workspace is trusted" in settled.plain


def test_a_trust_given_from_a_terminal_is_taken_up_at_the_next_cell(
        server: OpenAIServer, tmp_path: Path) -> None:
    server.replies.clear()
    server.script(Reply(text="Noted."), Reply(text="With skills."))
    with untrusted(server, tmp_path) as kernel:
        run = kernel.execute("Hello", allow_stdin=False)  # no one to answer: held
        assert run.status == "ok" and "report" not in system_prompt(server)
        done = subprocess.run(
            [sys.executable, "-m", "lily_kernel.cli.main", "trust", str(kernel.workspace),
             "--yes"], capture_output=True, text=True, timeout=60, check=False,
            env={**os.environ, "HOME": str(tmp_path / "home"),
                 "LILY_HOME": str(tmp_path / "home" / ".lily")})
        assert done.returncode == 0, done.stderr
        after = kernel.execute("Hello again", allow_stdin=False)
        assert after.status == "ok"
        assert "Trusted from elsewhere" in after.plain
        assert "- report:" in system_prompt(server)


def test_a_folder_that_ships_a_record_asks_first_and_runs_none_of_its_code(
        server: OpenAIServer, tmp_path: Path) -> None:
    """A folder whose only content is a record of turns (a golden transcript's, or a
    crafted one): Run All would replay its answers and, trusted under full auto, its
    code. The first chat cell asks the trust question, naming the record; declined, the
    recorded answer is replayed as text and its shell call, asked while the folder is
    not trusted (full auto or not), never runs."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    settings = {"LILY_MODEL": "openai/trust", "LILY_API_BASE": server.base_url,
                "OPENAI_API_KEY": "sk-trust-not-a-key", "LILY_STREAM": "0",
                "LILY_EVENT_LOG": "1", "LILY_RETRY_BACKOFF": "0.01", "LILY_POLICY": "auto"}
    server.replies.clear()
    server.script(Reply(tool_calls=[tool_call("shell", {"command": "touch ran.txt"})]),
                  Reply(text="Made it."))
    with lily_kernel(workspace, tmp_path / "author", **settings) as kernel:  # its author
        run = kernel.execute("Make the file", allow_stdin=False)
        assert run.status == "ok", run.reply
    assert (workspace / "ran.txt").exists()
    (workspace / "ran.txt").unlink()
    server.replies.clear()
    server.script(Reply(text="It was not made."))  # the declined call's result differs
    with lily_kernel(workspace, tmp_path / "home", **settings, LILY_TRUST="") as kernel:
        run, prompts = execute_answering(kernel, "Make the file", ["n", "n"])
        assert run.reply["status"] == "ok", run.reply
        assert prompts[0].startswith(f"This workspace is not trusted: {workspace}")
        assert ("record .lily/sessions/ (1 turn in 1 session log): Run All replays its "
                "answers, and under full auto runs their code (python, shell, MCP tools) "
                "unasked") in prompts[0]
        # The replayed call, asked (no "always": the folder is not trusted).
        assert '"touch ran.txt"' in prompts[1] and prompts[1].endswith("Run it? [y/N] ")
        shown = run.plain + json.dumps([m["content"] for m in run.outputs])
        assert "Replayed from the record" in shown
        assert "A tool's result differs from the record (step 2)" in shown
    assert not (workspace / "ran.txt").exists()
