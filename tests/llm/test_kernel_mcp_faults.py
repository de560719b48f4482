"""MCP servers that fail, through a real Lily kernel (jupyter_client over ZeroMQ), the
loopback model scripting its calls, a real stdio MCP server made with the SDK
(tests/support/mcp_fixture_server.py): a server that fails to start, crashes or hangs;
`/mcp`; and no server outlives the kernel, `kill -9` included. The tools allowed, asked
and denied, and trust: test_kernel_mcp.py."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.llm.test_kernel_mcp import (
    script,
    start,
    starts,
    tool_result,
    workspace_with,
)
from tests.llm.test_kernel_skills import log_events, running_with
from tests.support.openai_server import OpenAIServer
from tests.support.waiting import wait_until


def test_a_server_that_cannot_start_is_one_line_and_the_session_goes_on(
        server: OpenAIServer, tmp_path: Path) -> None:
    workspace_with(tmp_path, "--crash-on-start")
    with start(server, tmp_path) as kernel:
        script(server, final="Answered anyway.")
        run = kernel.execute("Hello", allow_stdin=True)
        assert run.status == "ok", run.reply
        [line] = [n for n in run.plain.splitlines() if "MCP server" in n]
        assert line.startswith("MCP server 'fx' could not start: ")
        assert "fixture: crashing on purpose" in line
        assert "Answered anyway." in str(run.outputs)
        [failed] = log_events(kernel, "mcp_server")
        assert failed["outcome"] == "failed" and failed["error"]
        assert "failed: " in kernel.execute("/mcp").plain
        script(server, final="Still here.")
        assert kernel.execute("Again", allow_stdin=True).status == "ok"
        assert starts(tmp_path) == 1  # not tried again at each cell


def test_a_server_breaking_the_protocol_or_crashing_mid_call(server: OpenAIServer,
                                                             tmp_path: Path) -> None:
    workspace_with(tmp_path, "--garbage",
                   tools="tools:\n  allow: [mcp__fx__crash, mcp__fx__echo]\n")
    with start(server, tmp_path) as kernel:
        script(server, ("mcp__fx__echo", {"text": "through the garbage"}),
               ("mcp__fx__crash", {}), ("mcp__fx__echo", {"text": "after"}))
        run = kernel.execute("Go", allow_stdin=True)
        assert run.status == "ok", run.reply
        assert tool_result(server, -3) == "through the garbage"
        assert tool_result(server, -2).startswith("Error: MCP server 'fx' stopped: ")
        assert tool_result(server).startswith("Error: MCP server 'fx' is not running")
        assert "Tool mcp__fx__crash: MCP server 'fx' stopped" in run.plain
        assert "failed: the connection ended" in kernel.execute("/mcp").plain


def test_the_stop_button_cancels_a_hanging_call(server: OpenAIServer, tmp_path: Path) -> None:
    workspace_with(tmp_path, tools="tools:\n  allow: [mcp__fx__hang, mcp__fx__echo]\n")
    with start(server, tmp_path) as kernel:
        script(server, ("mcp__fx__hang", {}), final="never")
        msg_id = kernel.kc.execute("Hang")
        wait_until(lambda: starts(tmp_path, "hanging"), "the hanging call is in flight",
                   timeout=120)  # a kernel, then the server, started on a loaded machine
        began = time.monotonic()
        kernel.km.interrupt_kernel()
        reply = kernel.reply_to(msg_id)  # (a kernel_info reply left from the start: skipped)
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        # Well before the call's own 20 s timeout (15 s: a bound a loaded machine keeps).
        assert time.monotonic() - began < 15
        kernel.drain_iopub()
        script(server, ("mcp__fx__echo", {"text": "still here"}))
        run = kernel.execute("Echo")
        assert run.status == "ok" and tool_result(server) == "still here"


def test_mcp_lists_servers_tools_and_what_the_policy_says(server: OpenAIServer,
                                                          tmp_path: Path) -> None:
    workspace_with(tmp_path, tools="tools:\n  deny: [mcp__fx__crash]\n  ask: [mcp__fx__add]\n")
    (tmp_path / "home" / ".lily").mkdir(parents=True)
    (tmp_path / "home" / ".lily" / "mcp.json").write_text(
        '{"mcpServers": {"gone": {"command": "/nonexistent/server"}}}')
    with start(server, tmp_path) as kernel:
        run = kernel.execute("/mcp")
        deadline = time.monotonic() + 120  # /mcp answers within 5 s: a server slow to
        while "starting: no answer yet" in run.plain and time.monotonic() < deadline:
            run = kernel.execute("/mcp")  # start on a loaded machine is shown so meanwhile
        assert run.status == "ok", run.reply
        text = run.plain
        rows = {line.split()[0]: line for line in text.splitlines()
                if line.startswith("mcp__fx__")}
        assert "asked (tools.ask)" in rows["mcp__fx__add"]
        assert "asked (by default)" in rows["mcp__fx__hang"]
        assert "denied" in rows["mcp__fx__crash"]
        assert "this workspace (lily.yaml)" in text and "you" in text
        assert "gone" in text and "failed: " in text


@pytest.mark.parametrize("end", ["kill -9", "shutdown"])
def test_no_server_outlives_the_kernel(server: OpenAIServer, tmp_path: Path, end: str) -> None:
    token = f"lily-mcp-end-{os.getpid()}-{time.monotonic_ns()}"
    workspace_with(tmp_path, "--child", token)
    temporary = tmp_path / "tmp"  # the Lily kernel's TMPDIR: its servers' private folders
    temporary.mkdir()

    def folders() -> list[str]:
        return sorted(p.name for p in temporary.iterdir() if p.name.startswith("lily-mcp-"))

    with start(server, tmp_path, TMPDIR=str(temporary)) as kernel:
        assert kernel.execute("/mcp").status == "ok"  # starts the server
        first = folders()
        assert len(first) == 1, first
        deadline = time.monotonic() + 60
        while len(running_with(token)) < 3:  # the reaper, the server, its child
            assert time.monotonic() < deadline, running_with(token)
            time.sleep(0.1)
        pid = kernel.km.provisioner.pid  # type: ignore[union-attr]
        if end == "kill -9":
            os.kill(pid, signal.SIGKILL)
        else:
            kernel.km.shutdown_kernel(now=False)
        # Gone with the kernel: at once on a quiet machine; 30 s bounds a loaded one.
        deadline = time.monotonic() + 30
        while running_with(token) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert running_with(token) == [], f"alive 30 s after {end}"
    if end == "shutdown":
        assert folders() == []
    else:  # nothing could remove it then: the next Lily that starts a server does
        with start(server, tmp_path, TMPDIR=str(temporary)) as again:
            assert again.execute("/mcp").status == "ok"
            assert first[0] not in folders() and len(folders()) == 1
