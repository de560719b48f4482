"""`lily mcp --http`: a real server process on a free loopback port, reached by real
clients: plain HTTP requests for what guards it (no token, a wrong one: 401; a foreign
`Origin`, a foreign `Host`: refused), the official SDK's Streamable HTTP client
(skill:// resources, a tool call) and fastmcp's (skills/list at 2026-07-28), the session
log (calls logged, the token never in it), a denied tool and an untrusted workspace."""

from __future__ import annotations

import asyncio
import json
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
    [log] = (workspace / ".lily" / "sessions").glob("*.jsonl")
    calls = [json.loads(line)["data"]["name"] for line in log.read_text().splitlines()
             if json.loads(line)["event"] == "tool_call"]
    assert calls == ["read", "shell"]


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
