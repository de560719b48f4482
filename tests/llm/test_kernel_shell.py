"""The shell through a real Lily kernel (jupyter_client over ZeroMQ), the loopback model
scripting its calls, real bubblewrap: the question as an `input_request` answered yes,
no, `a`, or not at all; a trusted and an untrusted lily.yaml allowing it (and Python);
a skill's narrowing; the stop button during a long command; and nothing it started
outlives the kernel: not its shutdown, its restart, nor a `kill -9`."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from lily_kernel.execution.cgroups import cgroup_folders, open_run_group
from lily_kernel.execution.limits import Limits
from tests.conftest import write_skill
from tests.core.test_scripts import sandbox_or_skip
from tests.kernel.conftest import LilyProcess, lily_kernel
from tests.llm.test_kernel_skills import execute_answering, log_events, running_with
from tests.support.openai_server import OpenAIServer, Reply, tool_call

SECRET = "sk-kernel-shell-SECRET-1234567890"


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    sandbox_or_skip()


def start(server: OpenAIServer, root: Path, **env: str) -> Any:
    workspace = root / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    settings = {"LILY_MODEL": "openai/kernel-shell", "LILY_API_BASE": server.base_url,
                "OPENAI_API_KEY": SECRET, "LILY_STREAM": "0", "LILY_EVENT_LOG": "1",
                "LILY_RETRY_BACKOFF": "0.01", **env}
    return lily_kernel(workspace, root / "home", **settings)


def script(server: OpenAIServer, *commands: str, final: str = "Done.") -> None:
    server.replies.clear()
    server.script(*(Reply(tool_calls=[tool_call("shell", {"command": c}, f"s{i}")])
                    for i, c in enumerate(commands)), Reply(text=final))


def tool_result(server: OpenAIServer, index: int = -1) -> str:
    return str(server.requests[index]["messages"][-1]["content"])


def test_yes_no_always_and_no_one_to_answer(server: OpenAIServer, tmp_path: Path) -> None:
    with start(server, tmp_path) as kernel:
        script(server, "echo yes > yes.txt; cat yes.txt")
        run, prompts = execute_answering(kernel, "Write yes", ["y"])
        assert run.status == "ok", run.reply
        assert prompts[0].startswith('Sandboxed (network only to hosts you allow; only the workspace "')
        assert '\n  "echo yes > yes.txt; cat yes.txt"\n' in prompts[0]
        assert prompts[0].endswith("Run it? [y/N/a] ")
        assert tool_result(server) == ("[exit code 0]\nyes\n[files written in the "
                                       "workspace: yes.txt (4 bytes, new)]")
        assert 'Shell "echo yes > yes.txt; cat yes.txt": exit code 0 (sandboxed)' in run.plain
        script(server, "touch no.txt")
        run, prompts = execute_answering(kernel, "Touch no", ["n"])
        said = 'the person declined running the command "touch no.txt"'  # once, plainly
        assert tool_result(server) == f"Refused: {said}."
        assert said in run.plain and "was not run" not in run.plain and "declined:" not in run.plain
        script(server, "touch unattended.txt")
        unattended = kernel.execute("Touch it", allow_stdin=False)
        assert unattended.status == "ok" and "asked by default" in tool_result(server)
        script(server, "echo always")
        run, prompts = execute_answering(kernel, "Echo", ["a"])
        assert tool_result(server) == "[exit code 0]\nalways\n"
        script(server, "touch later.txt")
        later = kernel.execute("Touch later", allow_stdin=True)  # would hang if it asked
        assert later.status == "ok" and (kernel.workspace / "later.txt").exists()
        assert not (kernel.workspace / "no.txt").exists()
        assert not (kernel.workspace / "unattended.txt").exists()
        assert [a["outcome"] for a in log_events(kernel, "approval")] == [
            "approved", "declined", "unanswerable", "always"]
        assert [r["status"] for r in log_events(kernel, "code_run")] == ["ok", "ok", "ok"]


# The argument each code-running tool takes.
ARGUMENT = {"shell": "command", "python": "code"}


def script_call(server: OpenAIServer, tool: str, code: str, final: str = "Done.") -> None:
    server.replies.clear()
    server.script(Reply(tool_calls=[tool_call(tool, {ARGUMENT[tool]: code}, "c0")]),
                  Reply(text=final))


@pytest.mark.parametrize(("tool", "code", "ran"), [
    ("shell", "echo trusted", "[exit code 0]\ntrusted\n"),
    ("python", "print('trusted')", "[ran]\ntrusted"),
])
def test_a_trusted_lily_yaml_allows_it(tool: str, code: str, ran: str, server: OpenAIServer,
                                       tmp_path: Path) -> None:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "lily.yaml").write_text(
        f"tools:\n  allow: [read, list, {tool}]\n")
    with start(server, tmp_path) as kernel:  # LILY_TRUST=workspace: trusted
        script_call(server, tool, code)
        run = kernel.execute("Do it", allow_stdin=True)  # would hang if it asked
        assert run.status == "ok" and tool_result(server) == ran
        assert log_events(kernel, "approval") == []


@pytest.mark.parametrize(("tool", "code", "answers"), [
    ("shell", "touch planted.txt", ["n", "a"]),
    ("python", "open('planted.txt', 'w')", ["n", "n"]),
])
def test_an_untrusted_lily_yaml_cannot_allow_it(tool: str, code: str, answers: list[str],
                                                server: OpenAIServer, tmp_path: Path) -> None:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "lily.yaml").write_text(
        f"tools:\n  allow: [read, list, {tool}]\npolicy: auto\n")
    with start(server, tmp_path, LILY_TRUST="") as kernel:
        script_call(server, tool, code)
        run, prompts = execute_answering(kernel, "Go", answers)
        assert run.status == "ok", run.reply
        trust, asked = prompts
        assert f"tools: {tool} would be 'allow', stays 'ask'" in trust
        assert "policy: auto (would let the model run code without asking" in trust
        assert asked.endswith("Run it? [y/N] ")  # no `a` in a folder not trusted
        assert tool_result(server).startswith("Refused: the person declined")
        assert not (kernel.workspace / "planted.txt").exists()


def test_a_skill_narrows_what_the_shell_may_run(server: OpenAIServer, tmp_path: Path) -> None:
    write_skill(tmp_path / "home" / ".lily" / "skills", "echoer",
                "---\nsummary: Echo things\nallowed-tools: Bash(echo:*)\n---\nEcho only.\n")
    with start(server, tmp_path, LILY_TOOLS_ALLOW="read,list,shell") as kernel:
        server.replies.clear()
        server.script(Reply(tool_calls=[tool_call("load_skill", {"name": "echoer"})]),
                      Reply(tool_calls=[tool_call("shell", {"command": "touch x; echo y"})]),
                      Reply(tool_calls=[tool_call("shell", {"command": "echo fine"})]),
                      Reply(text="ok"))
        run = kernel.execute("Echo", allow_stdin=True)
        assert run.status == "ok", run.reply
        assert "holds ';'" in tool_result(server, -2)
        assert tool_result(server) == "[exit code 0]\nfine\n"
        assert not (kernel.workspace / "x").exists()


def long_command(token: str) -> str:
    """A command that starts a detached process (a new session, its output closed) and
    waits: what a careless `nohup … &` leaves behind."""
    return (f"setsid sh -c 'sleep 300; : {token}-detached' >/dev/null 2>&1 < /dev/null & "
            f"echo started > started.txt; sh -c 'sleep 300; : {token}-waiting'")


def wait_started(kernel: LilyProcess, token: str) -> None:
    deadline = time.monotonic() + 60
    while not (kernel.workspace / "started.txt").exists() or len(running_with(token)) < 2:
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.1)


def gone_within(token: str, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := running_with(token)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_the_stop_button_ends_the_command_and_all_it_started(server: OpenAIServer,
                                                             tmp_path: Path) -> None:
    token = f"lily-stop-{os.getpid()}-{time.monotonic_ns()}"
    with start(server, tmp_path, LILY_TOOLS_ALLOW="shell") as kernel:
        script(server, long_command(token), final="never")
        msg_id = kernel.kc.execute("Run it")
        wait_started(kernel, token)
        began = time.monotonic()
        kernel.km.interrupt_kernel()
        reply = kernel.reply_to(msg_id, timeout=30)  # past a kernel_info left from the start
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        # At once, not after the command's 300 s (a quiet machine: well under a second).
        assert time.monotonic() - began < 15
        assert gone_within(token, 30) == []
        kernel.drain_iopub()
        assert [r["status"] for r in log_events(kernel, "code_run")] == ["interrupted"]
        server.replies.clear()
        server.script(Reply(text="Still here."))
        assert kernel.execute("Still there?").status == "ok"


@pytest.mark.parametrize("end", ["kill -9", "shutdown", "restart"])
def test_nothing_outlives_the_kernel(server: OpenAIServer, tmp_path: Path, end: str) -> None:
    token = f"lily-end-{os.getpid()}-{time.monotonic_ns()}"
    with start(server, tmp_path, LILY_TOOLS_ALLOW="shell") as kernel:
        script(server, long_command(token), final="never")
        kernel.kc.execute("Run it")
        wait_started(kernel, token)
        pid = kernel.km.provisioner.pid  # type: ignore[union-attr]
        if end == "kill -9":
            os.kill(pid, signal.SIGKILL)
        elif end == "shutdown":
            kernel.km.shutdown_kernel(now=False)
        else:
            kernel.km.restart_kernel(now=False)
        assert gone_within(token, 2) == [], f"alive 2 s after {end}"
    # The run's control groups: gone with the run, or (kill -9) with the next one's.
    group = open_run_group(Limits())
    if group is not None:
        asyncio.run(group.close())
    assert [f for f in cgroup_folders() for g in f.glob(f"lily-{pid}-*")] == []
