"""MCP servers' tools through a real Lily kernel (jupyter_client over ZeroMQ), the loopback
model scripting its calls, a real stdio MCP server made with the SDK
(tests/support/mcp_fixture_server.py): allowed, asked (yes, no, no one to answer),
denied; never started before the workspace is trusted. A server that fails to start,
crashes or hangs, `/mcp`, and no server outliving the kernel: test_kernel_mcp_faults.py
(a module of its own, so the two workers share them: each test starts a kernel)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.kernel.conftest import lily_kernel
from tests.llm.test_kernel_skills import execute_answering, log_events
from tests.support.openai_server import OpenAIServer, Reply, tool_call

FIXTURE = Path(__file__).resolve().parents[1] / "support" / "mcp_fixture_server.py"
SECRET = "sk-kernel-mcp-SECRET-1234567890"


def workspace_with(root: Path, *flags: str, tools: str = "", timeout: float = 20,
                   name: str = "fx") -> Path:
    """A workspace whose lily.yaml configures the fixture server (`fx`, or `name`),
    writing its starts to root/marker.txt."""
    workspace = root / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    args = ", ".join(f'"{a}"' for a in (str(FIXTURE), "--marker", str(root / "marker.txt"),
                                          *flags))
    (workspace / "lily.yaml").write_text(
        f"mcp_servers:\n  {name}:\n    command: {sys.executable}\n    args: [{args}]\n"
        f"    timeout: {timeout}\n{tools}")
    return workspace


def start(server: OpenAIServer, root: Path, **env: str) -> Any:
    settings = {"LILY_MODEL": "openai/kernel-mcp", "LILY_API_BASE": server.base_url,
                "OPENAI_API_KEY": SECRET, "LILY_STREAM": "0", "LILY_EVENT_LOG": "1",
                "LILY_RETRY_BACKOFF": "0.01", **env}
    return lily_kernel(root / "workspace", root / "home", **settings)


def script(server: OpenAIServer, *calls: tuple[str, dict[str, Any]], final: str = "Done.") -> None:
    server.replies.clear()
    server.requests.clear()
    server.script(*(Reply(tool_calls=[tool_call(name, args, f"c{i}")])
                    for i, (name, args) in enumerate(calls)), Reply(text=final))


def tool_result(server: OpenAIServer, index: int = -1) -> str:
    return str(server.requests[index]["messages"][-1]["content"])


def offered(server: OpenAIServer, index: int = -1) -> dict[str, Any]:
    return {t["function"]["name"]: t["function"] for t in server.requests[index].get("tools", [])}


def starts(root: Path, what: str = "started") -> int:
    """How many times the fixture server started (or, `what="hanging"`, began `hang`)."""
    marker = root / "marker.txt"
    lines = marker.read_text().splitlines() if marker.exists() else []
    return sum(line.startswith(what + " ") for line in lines)


def test_an_allowed_tool_runs_with_its_schema_and_is_logged(server: OpenAIServer,
                                                            tmp_path: Path) -> None:
    workspace_with(tmp_path, tools="tools:\n  allow: [read, list, mcp__fx__echo]\n")
    with start(server, tmp_path) as kernel:  # LILY_TRUST=workspace: trusted
        script(server, ("mcp__fx__echo", {"text": f"hello {SECRET}"}))
        run = kernel.execute("Echo hello", allow_stdin=True)  # would hang if it asked
        assert run.status == "ok", run.reply
        tools = offered(server)
        assert tools["mcp__fx__echo"]["parameters"]["properties"]["text"]["type"] == "string"
        assert "(MCP server 'fx')" in tools["mcp__fx__echo"]["description"]
        assert "mcp__fx__add" not in tools  # not in tools.allow: denied, so not offered
        assert tool_result(server).startswith("hello ") and SECRET not in tool_result(server)
        assert "Tool mcp__fx__echo: ran" in run.plain
        listing = kernel.execute("/mcp").plain
        assert [line for line in listing.splitlines() if "mcp__fx__echo" in line
                and "allowed" in line]
        assert [line for line in listing.splitlines() if "mcp__fx__add" in line
                and "denied" in line]
        [call] = log_events(kernel, "tool_call")
        assert call["name"] == "mcp__fx__echo" and call["allowed"] is True
        assert SECRET not in str(call)  # redacted as for the model
        [started] = log_events(kernel, "mcp_server")
        assert started["outcome"] == "running" and "mcp__fx__hang" in started["tools"]
        assert starts(tmp_path) == 1


def test_asked_by_default_yes_no_and_no_one_to_answer(server: OpenAIServer,
                                                      tmp_path: Path) -> None:
    workspace_with(tmp_path)
    with start(server, tmp_path) as kernel:
        script(server, ("mcp__fx__add", {"a": 2, "b": 3}))
        run, prompts = execute_answering(kernel, "Add", ["y"])
        assert run.status == "ok", run.reply
        assert prompts[0].startswith('Let the model run the tool "mcp__fx__add"')
        assert prompts[0].endswith("Allow it? [y/N/a] ")
        assert tool_result(server) == "5"
        script(server, ("mcp__fx__echo", {"text": "no"}))
        execute_answering(kernel, "Echo", ["n"])
        assert tool_result(server).startswith("Refused: the person declined")
        script(server, ("mcp__fx__echo", {"text": "unattended"}))
        unattended = kernel.execute("Echo", allow_stdin=False)
        assert unattended.status == "ok"
        assert "asked by default" in tool_result(server)
        assert "name mcp__fx__echo in tools.allow" in tool_result(server)
        assert [a["outcome"] for a in log_events(kernel, "approval")] == [
            "approved", "declined", "unanswerable"]


@pytest.mark.parametrize(("name", "denied"), [("fx", "mcp__fx"), ("GitHub", "MCP__github")])
def test_a_denied_tool_is_not_offered_and_a_call_is_refused(server: OpenAIServer,
                                                            tmp_path: Path, name: str,
                                                            denied: str) -> None:
    """`deny` names a server whatever the case of its name or of the prefix."""
    workspace_with(tmp_path, tools=f"tools:\n  deny: [{denied}]\n", name=name)
    with start(server, tmp_path) as kernel:
        script(server, (f"mcp__{name}__echo", {"text": "x"}))
        run = kernel.execute("Echo", allow_stdin=True)
        assert run.status == "ok", run.reply
        assert not [n for n in offered(server) if n.startswith("mcp__")]
        assert tool_result(server).startswith("Refused: ")
        [call] = log_events(kernel, "tool_call")
        assert call["allowed"] is False
        listing = kernel.execute("/mcp")
        assert f"mcp__{name}__echo" in listing.plain and "denied" in listing.plain
        assert "allowed" not in listing.plain and "asked" not in listing.plain


def test_an_untrusted_workspace_never_starts_its_server(server: OpenAIServer,
                                                        tmp_path: Path) -> None:
    workspace_with(tmp_path, tools="tools:\n  allow: [mcp__fx__echo]\n")
    with start(server, tmp_path, LILY_TRUST="") as kernel:
        script(server, ("mcp__fx__echo", {"text": "planted"}))
        run, prompts = execute_answering(kernel, "Echo", ["n"])  # the trust question: no
        assert run.status == "ok", run.reply
        # The question shows what trusting would run: the server's command line.
        assert f"mcp_servers: fx ({sys.executable} " in prompts[0]
        assert ") (starts the programs and contacts the servers it names; stays (none))" \
            in prompts[0]
        assert tool_result(server).startswith("Refused: ")  # no such tool here
        assert not [n for n in offered(server) if n.startswith("mcp__")]
        listing = kernel.execute("/mcp")
        assert "held until you trust this workspace" in listing.plain
        # What it would run shows under "reaches", held or not (it was left empty).
        [row] = [line for line in listing.plain.splitlines() if line.startswith("fx ")]
        assert f'"{sys.executable} ' in row and "marker.txt" in row, listing.plain
        assert starts(tmp_path) == 0 and log_events(kernel, "mcp_server") == []
        # Trusted: the server starts with the next chat cell, its lily.yaml allowing it.
        run, _ = execute_answering(kernel, "/trust", ["y"])
        assert run.status == "ok", run.reply
        script(server, ("mcp__fx__echo", {"text": "now"}))
        run = kernel.execute("Echo", allow_stdin=True)  # would hang if it asked
        assert run.status == "ok" and tool_result(server) == "now"
        assert starts(tmp_path) == 1


def test_the_trust_question_names_your_variables_a_server_would_be_sent(
        server: OpenAIServer, tmp_path: Path) -> None:
    """A folder's server whose header or env is `${VAR}` gets the person's variable once
    trusted: the question says which, and where (never its value)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "lily.yaml").write_text(
        "mcp_servers:\n  web:\n    type: http\n    url: https://mcp.invalid/mcp\n"
        "    headers: {Authorization: 'Bearer ${MY_SECRET}', X-Client: lily}\n"
        "  tool:\n    command: npx\n    args: [-y, some-server]\n"
        "    env: {API_KEY: '${OPENAI_API_KEY:-none}'}\n")
    with start(server, tmp_path, LILY_TRUST="", MY_SECRET="my-own-secret-0123456789") as kernel:
        script(server, final="Hi.")
        run, prompts = execute_answering(kernel, "Hello", ["n"])
        assert run.status == "ok", run.reply
        question = prompts[0]
        assert "web (https://mcp.invalid/mcp; with Authorization, X-Client; sends $MY_SECRET " \
            "(your environment) to https://mcp.invalid as header Authorization)" in question
        assert "tool (npx -y some-server; with API_KEY; sends $OPENAI_API_KEY (your " \
            "environment) to npx as its variable API_KEY)" in question
        assert "my-own-secret" not in question and SECRET not in question
        assert log_events(kernel, "mcp_server") == []


def test_your_own_servers_run_nothing_of_an_untrusted_folder(server: OpenAIServer,
                                                            tmp_path: Path) -> None:
    """<Lily home>/mcp.json's servers start in any folder, trusted or not (this one asks
    nothing: it holds no lily.yaml): outside it, their command found as the sandbox
    finds one. The folder's `mcp_fixture_server.py` (for `python -m`), its
    `node_modules/.bin` (for `npx` and a relative PATH entry) and a PATH entry inside it
    never run; the person's real server does."""
    workspace, planted = tmp_path / "workspace", tmp_path / "planted.txt"
    (workspace / "node_modules" / ".bin").mkdir(parents=True)
    (workspace / "bin").mkdir()
    (workspace / "mcp_fixture_server.py").write_text(
        f"open({str(planted)!r}, 'a').write('python -m ran its module\\n')\n")
    for program in (workspace / "node_modules" / ".bin" / "lily-x", workspace / "bin" / "lily-y"):
        program.write_text(f"#!/bin/sh\necho \"$0 ran\" >> {planted}\n")
        program.chmod(0o755)
    servers: dict[str, Any] = {
        "mine": {"command": sys.executable, "args": [
            "-m", "mcp_fixture_server", "--marker", str(tmp_path / "marker.txt")],
            "env": {"PYTHONPATH": str(FIXTURE.parent)}},
        "relative": {"command": "lily-x"},  # on PATH as node_modules/.bin
        "inside": {"command": "lily-y"},  # on PATH as <workspace>/bin
    }
    if shutil.which("npx"):  # offline: it may only run what is installed here
        servers["npx"] = {"command": "npx", "args": ["--offline", "--no", "lily-x"]}
    (tmp_path / "home" / ".lily").mkdir(parents=True)
    (tmp_path / "home" / ".lily" / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    path = os.pathsep.join(("node_modules/.bin", str(workspace / "bin"), os.environ["PATH"]))
    with start(server, tmp_path, LILY_TRUST="", PATH=path) as kernel:
        script(server, final="Hello.")
        run = kernel.execute("Hello", allow_stdin=False)
        assert run.status == "ok", run.reply
        assert not planted.exists(), planted.read_text()
        assert starts(tmp_path) == 1  # the person's own server, from its PYTHONPATH
        assert "mcp__mine__echo" in offered(server)
        listing = kernel.execute("/mcp").plain
        assert "'lily-x' is not found on PATH" in listing
        assert "'lily-y' is not found on PATH" in listing
    assert not planted.exists()
