"""A skill's reference and script through a real Lily kernel (jupyter_client over ZeroMQ)
against the scripted loopback model: the approval is a real `input_request` on the stdin
channel, answered by the client; without stdin the run is refused; the stop button
kills the script's process group and the kernel lives on."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES
from tests.kernel.conftest import Execution, LilyProcess, lily_kernel
from tests.support.openai_server import OpenAIServer, Reply, tool_call

SECRET = "sk-kernel-skills-SECRET-0987654321"
FORMFILL = FIXTURES / "skill_files" / "formfill"


def start_kernel(server: OpenAIServer, root: Path, skill: Path = FORMFILL,
                 **env: str) -> Any:
    """A kernel whose skill lives in the user root (~/.lily/skills)."""
    workspace = root / "workspace"
    workspace.mkdir(parents=True)
    home = root / "home"
    shutil.copytree(skill, home / ".lily" / "skills" / skill.name)
    settings = {"LILY_MODEL": "openai/kernel-skills", "LILY_API_BASE": server.base_url,
                "OPENAI_API_KEY": SECRET, "LILY_STREAM": "0", "LILY_EVENT_LOG": "1",
                "LILY_RETRY_BACKOFF": "0.01", **env}
    return lily_kernel(workspace, home, **settings)


def execute_answering(kernel: LilyProcess, code: str, answers: list[str],
                      timeout: float = 60) -> tuple[Execution, list[str]]:
    """Run a cell with stdin allowed, answering each input_request in turn."""
    msg_id = kernel.kc.execute(code, allow_stdin=True)
    prompts: list[str] = []
    for answer in answers:
        request = kernel.kc.get_stdin_msg(timeout=timeout)
        assert request["msg_type"] == "input_request"
        assert request["parent_header"]["msg_id"] == msg_id
        prompts.append(request["content"]["prompt"])
        kernel.kc.input(answer)
    reply = kernel.reply_to(msg_id, timeout)  # skips a kernel_info reply left from the start
    run = Execution(reply["content"])
    while True:
        msg = kernel.kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return run, prompts
        if msg["msg_type"] not in ("status", "execute_input"):
            run.outputs.append(msg)


def log_events(kernel: LilyProcess, kind: str) -> list[dict[str, Any]]:
    [log] = (kernel.workspace / ".lily" / "sessions").glob("*.jsonl")
    events = [json.loads(line) for line in log.read_text().splitlines()]
    return [e["data"] for e in events if e["event"] == kind]


def tool_result(server: OpenAIServer, index: int = -1) -> str:
    return str(server.requests[index]["messages"][-1]["content"])


def script_turn(server: OpenAIServer, script: str, args: list[str], final: str) -> None:
    server.replies.clear()
    server.script(
        Reply(tool_calls=[tool_call("load_skill", {"name": "formfill"})]),
        Reply(tool_calls=[tool_call("read_skill_file", {"path": "references/forms.md"})]),
        Reply(tool_calls=[tool_call("run_skill_script", {"script": script, "args": args})]),
        Reply(text=final))


def test_approved_through_the_input_request(server: OpenAIServer, tmp_path: Path) -> None:
    with start_kernel(server, tmp_path, LILY_TOOLS_ASK="run_skill_script") as kernel:
        script_turn(server, "scripts/fill_form.py", ["Ada", "2024-05-01"], "Your form is filled.")
        run, prompts = execute_answering(kernel, "Fill my form for Ada, 2024-05-01", ["y"])
        assert run.status == "ok", run.reply
        assert len(prompts) == 1
        assert prompts[0].split(". ", 1)[1].startswith(
            'Run "scripts/fill_form.py" of skill "formfill"\n  with arguments "Ada", '
            '"2024-05-01"\n')
        assert prompts[0].rstrip().endswith("[y/N]")
        assert (kernel.workspace / "filled.txt").read_text() == "name: Ada\ndate: 2024-05-01\n"
        assert tool_result(server, -2).startswith("# Forms")  # the reference, on demand
        assert tool_result(server) == ("[exit code 0]\nfilled the form for Ada on 2024-05-01\n"
                                       "[files written in the workspace: filled.txt (27 "
                                       "bytes, new)]")
        assert "Your form is filled." in run.displays[-1]["text/plain"]
        # What ran, what it printed (a stream), how it ended, the file it wrote.
        assert "scripts/fill_form.py Ada 2024-05-01" in run.plain
        # (as it comes: the pipe may hand the line and its end in two stream messages)
        assert "".join(c["text"] for c in run.of_type("stream") if c["name"] == "stdout") \
            == "filled the form for Ada on 2024-05-01\n"
        assert 'Script "scripts/fill_form.py": exit code 0' in run.plain
        assert "Files written: `filled.txt` (27 bytes, new)." in run.plain
        [approval] = log_events(kernel, "approval")
        assert approval["outcome"] == "approved" and approval["question"] == prompts[0]
        assert [e["exit_code"] for e in log_events(kernel, "skill_script_run")] == [0]


def test_declined_and_unanswerable_are_refused(server: OpenAIServer, tmp_path: Path) -> None:
    with start_kernel(server, tmp_path, LILY_TOOLS_ASK="run_skill_script") as kernel:
        script_turn(server, "scripts/fill_form.py", ["Bo", "2024-01-01"], "Not filled.")
        run, prompts = execute_answering(kernel, "Fill it", ["n"])
        assert run.status == "ok" and len(prompts) == 1
        assert tool_result(server).startswith("Refused: the person declined")
        # nbclient, papermill: execute requests with allow_stdin false.
        script_turn(server, "scripts/fill_form.py", ["Bo", "2024-01-01"], "Could not run it.")
        unattended = kernel.execute("Fill it again", allow_stdin=False)
        assert unattended.status == "ok", unattended.reply
        refusal = tool_result(server)
        assert refusal.startswith("Refused: running scripts/fill_form.py of skill 'formfill' "
                                  "needs the person's approval (tools.ask in lily.yaml), and "
                                  "no one can answer here")
        assert "name run_skill_script in tools.allow" in refusal
        assert 'Script "scripts/fill_form.py": refused' in unattended.plain
        assert not (kernel.workspace / "filled.txt").exists()
        assert [a["outcome"] for a in log_events(kernel, "approval")] == [
            "declined", "unanswerable"]


def test_denied_by_default_without_asking(server: OpenAIServer, tmp_path: Path) -> None:
    with start_kernel(server, tmp_path, LILY_TOOLS_DENY="run_skill_script") as kernel:
        script_turn(server, "scripts/fill_form.py", ["Cy", "2024-01-01"], "Denied.")
        run = kernel.execute("Fill it", allow_stdin=True)  # would hang if it asked
        assert run.status == "ok"
        assert tool_result(server) == ("Refused: tool 'run_skill_script' is not allowed by "
                                       "the tool policy.")
        assert log_events(kernel, "approval") == []
        assert not (kernel.workspace / "filled.txt").exists()


def running_with(token: str) -> list[int]:
    """Live processes whose command line holds `token` (seen from outside any sandbox)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if token.encode() in (entry / "cmdline").read_bytes():
                state = (entry / "stat").read_text().split(")")[-1].split()[0]
                if state != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def gone(token: str) -> bool:
    deadline = time.monotonic() + 10
    while running_with(token):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_interrupt_stops_the_script_and_the_kernel_lives(server: OpenAIServer,
                                                         tmp_path: Path) -> None:
    with start_kernel(server, tmp_path, LILY_TOOLS_ALLOW="run_skill_script") as kernel:
        token = f"lily-slow-{os.getpid()}-{time.monotonic_ns()}"
        script_turn(server, "scripts/slow.py", ["slow.pid", token], "never")
        msg_id = kernel.kc.execute("Be slow")
        pid_file = kernel.workspace / "slow.pid"
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text().strip()):
            assert time.monotonic() < deadline, "the script never started"
            time.sleep(0.1)
        assert running_with(token), "the test cannot see the script's child"
        began = time.monotonic()
        kernel.km.interrupt_kernel()
        reply = kernel.reply_to(msg_id, timeout=30)  # past a kernel_info left from the start
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        assert time.monotonic() - began < 10
        assert gone(token), "the script's child survived the interrupt"
        assert kernel.km.is_alive()
        kernel.drain_iopub()
        assert [e["outcome"] for e in log_events(kernel, "skill_script_run")] == ["interrupted"]
        server.replies.clear()
        server.script(Reply(text="Still here."))
        after = kernel.execute("Are you there?")
        assert after.status == "ok" and "Still here." in after.displays[-1]["text/plain"]


def test_interrupt_while_the_question_waits(server: OpenAIServer, tmp_path: Path) -> None:
    with start_kernel(server, tmp_path, LILY_TOOLS_ASK="run_skill_script") as kernel:
        script_turn(server, "scripts/fill_form.py", ["Di", "2024-01-01"], "never")
        msg_id = kernel.kc.execute("Fill it", allow_stdin=True)
        request = kernel.kc.get_stdin_msg(timeout=60)
        assert 'Run "scripts/fill_form.py"' in request["content"]["prompt"]
        kernel.km.interrupt_kernel()
        reply = kernel.reply_to(msg_id, timeout=30)  # past a kernel_info left from the start
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        assert kernel.km.is_alive() and not (kernel.workspace / "filled.txt").exists()
        kernel.drain_iopub()
        assert kernel.execute("/help").status == "ok"
