"""`lily mcp --http`: a real server process on a free loopback port, reached by real
clients: plain HTTP requests for what guards it (no token, a wrong one: 401; a foreign
`Origin`, a foreign `Host`: refused), the official SDK's Streamable HTTP client
(skill:// resources, a tool call) and fastmcp's (skills/list at 2026-07-28), the session
log (calls logged, the token never in it), a denied tool and an untrusted workspace."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
from fastmcp import Client as FastClient
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.skills import SkillsClientExtension
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.conftest import write_skill
from tests.kernel.conftest import REPO
from tests.kernel.mcp_http_server import HttpServer, lily_mcp_http
from tests.kernel.test_mcp_server import SECRET, make_workspace

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "1"}}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def post(server: HttpServer, **headers: str) -> httpx.Response:
    return httpx.post(server.url, json=INITIALIZE, headers={**ACCEPT, **headers}, timeout=30)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def docs_snippet(marker: str) -> str:
    """The Python block under `<!-- marker -->` in docs/mcp.md."""
    text = (REPO / "docs" / "mcp.md").read_text()
    return text.split(f"<!-- {marker} -->\n```python\n", 1)[1].split("```", 1)[0]


def handshake_skills_list(server: HttpServer) -> dict[str, Any]:
    """`skills/list` asked by a client of the 2025-11-25 handshake (raw HTTP)."""
    headers = {**ACCEPT, **bearer(server.token)}
    started = httpx.post(server.url, json=INITIALIZE, headers=headers, timeout=30)
    headers |= {"Mcp-Session-Id": started.headers["mcp-session-id"],
                "Mcp-Protocol-Version": "2025-11-25"}
    httpx.post(server.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
               headers=headers, timeout=30)
    asked = httpx.post(server.url, json={"jsonrpc": "2.0", "id": 2, "method": "skills/list",
                                         "params": {}}, headers=headers, timeout=30)
    [data] = re.findall(r"^data: (.*)$", asked.text, re.MULTILINE)
    return dict(json.loads(data))


def test_requests_need_the_token_and_a_local_origin(tmp_path: Path) -> None:
    """By default: bound to 127.0.0.1, a token made and said once on stderr; no token or
    a wrong one is 401, a foreign `Origin` 403, a foreign `Host` 421; a loopback page's
    `Origin` and none at all (a non-browser client) are served. A file holding the
    token, read through a tool, comes back redacted, and no log holds the token."""
    workspace = make_workspace(tmp_path)

    async def read_leak(server: HttpServer) -> Any:
        (workspace / "leak.txt").write_text(f"token={server.token}\n")
        async with FastClient(StreamableHttpTransport(server.url, auth=server.token)) as c:
            return await c.call_tool("read", {"path": "leak.txt"})

    with lily_mcp_http(workspace, tmp_path / "home", LILY_EVENT_LOG="1") as server:
        token = bearer(server.token)
        none, wrong = post(server), post(server, Authorization="Bearer not-the-token")
        foreign = post(server, Origin="https://evil.example", **token)
        rebound = post(server, Host="evil.example", **token)  # DNS rebinding
        local_page = post(server, Origin="http://localhost:5173", **token)
        no_origin = post(server, **token)
        leak = asyncio.run(read_leak(server))
        refused = handshake_skills_list(server)
    assert refused["error"]["code"] == -32601  # skills/list: 2026-07-28 only (docs/mcp.md)
    assert "not available at protocol version '2025-11-25'" in refused["error"]["message"]
    assert none.status_code == 401 and wrong.status_code == 401
    assert none.headers["www-authenticate"].startswith("Bearer")
    assert foreign.status_code == 403
    assert rebound.status_code == 421
    assert local_page.status_code == 200 and no_origin.status_code == 200
    assert '"name":"lily"' in no_origin.text  # the initialize result's serverInfo
    assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/mcp")
    assert len(server.token) >= 40  # secrets.token_urlsafe(32)
    assert sum(server.token in line for line in server.stderr) == 1
    assert not any("reachable from other machines" in line for line in server.stderr)
    assert "token=" in leak.content[0].text and server.token not in leak.content[0].text
    logs = list((workspace / ".lily" / "sessions").glob("*.jsonl"))
    assert logs and all(server.token not in log.read_text() for log in logs)
    assert "leak.txt" in logs[0].read_text()  # the call is logged, the token is not


def test_an_sdk_client_reads_skills_and_calls_tools_with_the_token(tmp_path: Path) -> None:
    """The official SDK's client, forced to the 2025-11-25 handshake (as Claude Code and
    Codex connect today), and fastmcp's at 2026-07-28 with the skills extension: the
    same session and log behind both."""
    workspace = make_workspace(tmp_path, "tools:\n  deny: [write]\n")
    token = "lily-test-token-0123456789abcdef"

    async def handshake_era(url: str) -> Any:
        http = create_mcp_http_client(headers=bearer(token))
        async with http, Client(streamable_http_client(url, http_client=http),
                                mode="legacy") as client:
            resources = await client.list_resources()
            body = await client.read_resource("skill://pdf-forms/scripts/fill.py")
            tools = await client.list_tools()
            read = await client.call_tool("read", {"path": "data.txt"})
            shell = await client.call_tool("shell", {"command": "echo hi"})
            return resources, body, tools, read, shell

    async def modern(url: str) -> Any:
        async with FastClient(StreamableHttpTransport(url, auth=token),
                              extensions=[SkillsClientExtension()]) as client:
            return client.protocol_version, await client.list_skills()

    with lily_mcp_http(workspace, tmp_path / "home", LILY_EVENT_LOG="1",
                       LILY_MCP_TOKEN=token) as server:
        resources, body, tools, read, shell = asyncio.run(handshake_era(server.url))
        protocol, skills = asyncio.run(modern(server.url))
        env = {**os.environ, "LILY_MCP_URL": server.url, "LILY_MCP_TOKEN": token}
        snippets = [subprocess.run([sys.executable, "-c", docs_snippet(marker)], env=env,
                                   capture_output=True, text=True, timeout=120)
                    for marker in ("sdk-snippet", "fastmcp-snippet")]
    assert {str(r.uri) for r in resources.resources} >= {"skill://pdf-forms/SKILL.md",
                                                          "skill://notes/SKILL.md"}
    assert body.contents[0].text == "print('x')\n"
    names = {t.name for t in tools.tools}
    assert "read" in names and "write" not in names  # denied: not listed
    assert not read.is_error and "the key is" in read.content[0].text
    assert SECRET not in read.content[0].text
    assert shell.is_error and "tools.allow" in shell.content[0].text
    assert protocol == "2026-07-28"
    assert {s.uri for s in skills} == {"skill://notes/SKILL.md", "skill://pdf-forms/SKILL.md"}
    assert not any(token in line for line in server.stderr)  # the person's own: not said
    sdk, fast = snippets  # docs/mcp.md's, run as written
    assert sdk.returncode == 0 and fast.returncode == 0, sdk.stderr[-2000:] + fast.stderr[-2000:]
    assert "skill://pdf-forms/SKILL.md" in sdk.stdout and "data.txt" in sdk.stdout
    assert "skill://notes/SKILL.md - Keep notes." in fast.stdout
    [log] = (workspace / ".lily" / "sessions").glob("*.jsonl")
    calls = [json.loads(line)["data"]["name"] for line in log.read_text().splitlines()
             if json.loads(line)["event"] == "tool_call"]
    assert calls == ["read", "shell", "list"]  # the last: the docs' snippet


def test_an_untrusted_workspace_over_http_serves_only_the_persons_skills(
        tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path, "tools:\n  allow: [read, list, write]\n")
    write_skill(tmp_path / "home" / ".lily" / "skills", "mine", "---\ndescription: Mine.\n---\n")

    async def work(server: HttpServer) -> Any:
        async with FastClient(StreamableHttpTransport(server.url, auth=server.token),
                              extensions=[SkillsClientExtension()]) as client:
            skills = await client.list_skills()
            write = await client.call_tool("write", {"path": "planted.txt", "content": "x"},
                                           raise_on_error=False)
            return skills, write

    with lily_mcp_http(workspace, tmp_path / "home", LILY_TRUST="") as server:
        skills, write = asyncio.run(work(server))
    assert [s.uri for s in skills] == ["skill://mine/SKILL.md"]
    assert write.is_error and "not trusted" in write.content[0].text
    assert not (workspace / "planted.txt").exists()


def test_every_address_still_needs_the_token_and_says_it_is_reachable(tmp_path: Path) -> None:
    """`--host 0.0.0.0`: reachable from the network, said at start; reached here through
    loopback, the token and the Origin check hold as on 127.0.0.1."""
    workspace = make_workspace(tmp_path)
    with lily_mcp_http(workspace, tmp_path / "home", "--host", "0.0.0.0") as served:
        port = served.url.split(":")[2].split("/")[0]
        server = HttpServer(served.process, f"http://127.0.0.1:{port}/mcp", served.token)
        none = post(server)
        foreign = post(server, Origin="https://evil.example", **bearer(server.token))
        ok = post(server, **bearer(server.token))
    assert served.url.startswith("http://0.0.0.0:")
    assert any("0.0.0.0 is reachable from other machines: every request needs the token"
               in line for line in served.stderr)
    assert none.status_code == 401 and foreign.status_code == 403 and ok.status_code == 200
