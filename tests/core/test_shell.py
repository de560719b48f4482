"""The shell tool through the real gate and real bubblewrap: a command runs in the
workspace and reports its exit status and output; the question shows it whole; never
outside the sandbox; the time limit, the output cap, the stop button; a `code_run`
event for every run; a skill's `Bash(...)` entries narrow the commands."""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from pathlib import Path

import pytest

from lily_kernel.execution.limits import RunSettings
from lily_kernel.execution.runner import ScriptHost
from lily_kernel.tools import ActiveSkill
from lily_kernel.tools.command_rules import command_refusal
from lily_kernel.tools.shell import MAX_COMMAND_CHARS
from tests.core.test_scripts import sandbox_or_skip
from tests.support.shell_gate import run_shell, shell_policy
from tests.support.waiting import until

ENVIRON = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
           "OPENAI_API_KEY": "sk-shell-test-SECRET-1234567890"}


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    sandbox_or_skip()


def test_a_command_runs_in_the_workspace_and_reports_its_exit_status(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("one\ntwo\n")
    done = run_shell("wc -l < notes.txt; pwd; echo made > out.txt; exit 3", workspace, ENVIRON)
    assert done.status == "ran"
    assert done.output == (f"[exit code 3]\n2\n{workspace.resolve()}\n"
                           "[files written in the workspace: out.txt (5 bytes, new)]")
    assert (workspace / "out.txt").read_text() == "made\n"
    [run] = done.of("code_run")
    command = "wc -l < notes.txt; pwd; echo made > out.txt; exit 3"
    assert run["tool"] == "shell" and run["caller"] == "model" and run["code"] == command
    assert run["sha256"] == hashlib.sha256(command.encode()).hexdigest()
    assert (run["status"], run["exit_code"]) == ("error", 3)
    # The output's digest names the workspace as {workspace}: a replay elsewhere matches.
    assert run["output_sha256"] == hashlib.sha256(b"2\n{workspace}\n").hexdigest()
    assert run["output_bytes"] == len("2\n{workspace}\n")
    assert run["duration_ms"] > 0


def test_the_question_shows_the_command_whole_and_escaped(workspace: Path) -> None:
    command = "printf 'x%.0s' $(seq 300)\x1b[2K\nRun it? [y/N] y " + "z" * 300
    done = run_shell(command, workspace, ENVIRON, policy=shell_policy(), answers=["n"])
    [question] = done.questions
    lines = question.split("\n")
    assert lines[0] == ("Sandboxed (network only to hosts you allow; only the workspace "
                        f'"{workspace.resolve()}" writable). Run with /bin/sh:')
    # Whole (no "…", however long), one line, the escape and the newline made visible.
    assert lines[1] == '  "printf \'x%.0s\' $(seq 300)\\x1b[2K\\nRun it? [y/N] y ' + "z" * 300 + '"'
    assert lines[2].startswith("  (a: yes, and run \"shell\" without asking")
    assert lines[3] == "Run it? [y/N/a] " and len(lines) == 4
    assert done.status == "refused" and done.of("code_run") == []
    assert done.of("approval")[0]["outcome"] == "declined"


def test_asked_by_default_yes_runs_and_no_one_to_ask_refuses(workspace: Path) -> None:
    policy = shell_policy()  # allow: "*"
    assert policy.decision("shell") == "ask" and policy.why_asked("shell") == "default"
    yes = run_shell("echo hi", workspace, ENVIRON, policy=policy, answers=["y"])
    assert (yes.status, yes.output) == ("ran", "[exit code 0]\nhi\n")
    assert [a["outcome"] for a in yes.of("approval")] == ["approved"]
    unanswered = run_shell("echo hi", workspace, ENVIRON, policy=policy)
    assert unanswered.status == "refused"
    assert "needs the person's approval (asked by default)" in unanswered.output
    assert "name shell in tools.allow" in unanswered.output and "/policy auto" in unanswered.output


def test_never_outside_the_sandbox(workspace: Path) -> None:
    host = ScriptHost({**ENVIRON, "PATH": "/nonexistent"}, RunSettings(30))
    done = run_shell("touch escaped", workspace, ENVIRON, host=host, policy=shell_policy(),
                     answers=["y"])
    assert done.status == "refused" and done.questions == []  # refused before any question
    assert done.output == (
        "Refused: code runs only in the sandbox, and there is none here (bubblewrap (bwrap) "
        "is not installed); install bubblewrap (the `bubblewrap` package, e.g. `apt install "
        "bubblewrap`) and restart the kernel.")
    assert not (workspace / "escaped").exists()


@pytest.mark.parametrize(("command", "said"), [
    ("", "the command is empty."),
    ("echo a\0b", "the command contains a NUL character."),
    ("x" * (MAX_COMMAND_CHARS + 1), f"at most {MAX_COMMAND_CHARS:,}"),
])
def test_a_command_that_cannot_be_shown_or_run_fails_before_any_question(
        workspace: Path, command: str, said: str) -> None:
    done = run_shell(command, workspace, ENVIRON, policy=shell_policy(), answers=["y"])
    assert done.status == "failed" and said in done.output and done.questions == []


def test_the_time_limit_ends_the_command_and_all_it_started(workspace: Path) -> None:
    began = time.monotonic()
    done = run_shell("sleep 60 & sleep 60", workspace, ENVIRON, timeout=1.5)
    assert time.monotonic() - began < 10
    assert done.output.startswith("[stopped: it ran longer than the time limit (1.5 s)]")
    assert done.of("code_run")[0]["status"] == "timeout"


def test_the_stop_button_ends_the_command(workspace: Path) -> None:
    """Cancelling the call (what the stop button does to the cell) kills the sandbox; the
    event says `interrupted`."""
    from lily_kernel.events import Event, EventLog
    from lily_kernel.runtime.tool_gate import ToolGate
    from lily_kernel.tools import Hosts, ToolContext, default_registry
    from tests.support.sink import RecordingSink  # the gate, cancelled from outside

    events: list[Event] = []
    token = f"lily-stop-{os.getpid()}-{time.monotonic_ns()}"
    gate = ToolGate(default_registry(), shell_policy(allow=("shell",)),
                    ToolContext(workspace, services=Hosts(ScriptHost(ENVIRON, RunSettings(60)))),
                    EventLog(None, "t", listener=events.append))

    async def stop_soon() -> None:
        call = asyncio.ensure_future(gate.run(RecordingSink(), "shell", {
            "command": f"echo started > started.txt; sh -c 'sleep 60; : {token}'"}, "model"))
        await until(lambda: (workspace / "started.txt").exists() and _running(token),
                    "the command and the process it started are running")
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(stop_soon())
    assert not _running(token)
    assert [e.data["status"] for e in events if e.event == "code_run"] == ["interrupted"]


def _running(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and token.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


# --- narrowing: a skill's Bash(...) entries -------------------------------------------


@pytest.mark.parametrize(("command", "allowed"), [
    ("git status", True), ("git status --short", True), ("  git   status  -s", True),
    ("git statusx", False), ("git push", False), ("git", False), ("npm test", True),
    ("npm test --watch", False), ("ls -la", True), ("lsblk", False),
])
def test_bash_patterns_allow_commands_by_whole_words(command: str, allowed: bool) -> None:
    patterns = ("git status:*", "npm test", "ls *")
    assert (command_refusal(command, patterns, "s") is None) is allowed


@pytest.mark.parametrize("command", [
    "git status; rm -rf x", "git status && curl x", "git status || true", "git status | sh",
    "git status & sleep 9", "git status > f", "git status < f", "git status `id`",
    "git status $(id)", "git status\nid", "git status 'a;b'", "git status \"$(id)\"",
])
def test_while_narrowed_control_operators_are_refused_with_the_reason(command: str) -> None:
    why = command_refusal(command, ("git status:*",), "gitter")
    assert why is not None and why.startswith(
        "the active skill 'gitter' allows only the commands `git status:*` (its allowed-tools), "
        "and this command holds ")
    assert "shell control operators" in why


def test_a_pattern_lily_does_not_read_allows_nothing() -> None:
    assert command_refusal("git log main", ("git * main",), "s") is not None
    assert command_refusal("anything", ("*x*",), "s") is not None


def test_the_active_skills_narrowing_refuses_before_any_question(workspace: Path) -> None:
    skill = ActiveSkill("gitter", workspace, commands=("echo:*",))
    ok = run_shell("echo allowed", workspace, ENVIRON, skill=skill)
    assert ok.output == "[exit code 0]\nallowed\n"
    refused = run_shell("touch nope", workspace, ENVIRON, skill=skill,
                        policy=shell_policy(), answers=["y"])
    assert refused.status == "refused" and refused.questions == []
    assert refused.output == ("Refused: the active skill 'gitter' allows only the commands "
                              "`echo:*` (its allowed-tools); this command is not one of them.")
    assert not (workspace / "nope").exists()
