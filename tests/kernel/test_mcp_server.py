"""`lily mcp` as a real stdio subprocess, driven by fastmcp's client (the SDK's, with the
skills extension): initialize, skills/list and skills/get (each digest checked against
the file's bytes), resources read, Lily's tools under allow/deny/ask, the session log,
and an untrusted workspace (its skills not served, its writes refused)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.skills import SkillsClientExtension

from tests.conftest import write_skill
from tests.kernel.conftest import REPO

SECRET = "sk-lily-mcp-SECRET-0987654321"


def transport(workspace: Path, home: Path, **env: str) -> StdioTransport:
    settings = {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": str(REPO),
                "LILY_HOME": str(home / ".lily"), "LILY_TRUST": "workspace",
                "LILY_SKILLS_BUNDLED_DIR": str(home / "none"), "OPENAI_API_KEY": SECRET,
                **env}
    return StdioTransport(sys.executable, ["-m", "lily_kernel.cli.main", "mcp", "--workspace",
                                           str(workspace)], env=settings, cwd=str(workspace))


def served(workspace: Path, home: Path, work: Any, **env: str) -> Any:
    async def run() -> Any:
        async with Client(transport(workspace, home, **env),
                          extensions=[SkillsClientExtension()]) as client:
            return await work(client)
    return asyncio.run(run())


def make_workspace(root: Path, config: str = "") -> Path:
    workspace = root / "ws"
    write_skill(workspace / "skills", "pdf-forms", "---\ndescription: Fill PDF forms.\n"
                "license: MIT\n---\nRead `scripts/fill.py`.\n")
    (workspace / "skills" / "pdf-forms" / "scripts").mkdir()
    (workspace / "skills" / "pdf-forms" / "scripts" / "fill.py").write_bytes(b"print('x')\n")
    write_skill(workspace / "skills", "notes", "---\nsummary: Keep notes.\n---\nBody.\n")
    write_skill(workspace / "skills", "Bad_Name", "---\ndescription: Not a spec name.\n---\n")
    (workspace / "data.txt").write_text(f"the key is {SECRET}\n")
    if config:
        (workspace / "lily.yaml").write_text(config)
    return workspace


def test_skills_are_served_with_digests_of_their_files(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)

    async def work(client: Client[Any]) -> Any:
        caps = (client.server_capabilities, client.protocol_version)
        skills = await client.list_skills()
        got = await client.get_skill("skill://pdf-forms/SKILL.md")
        body = await client.read_resource("skill://pdf-forms/scripts/fill.py")
        return caps, skills, got, body

    caps, skills, got, body = served(workspace, tmp_path / "home", work)
    capabilities, protocol = caps
    assert "io.modelcontextprotocol/skills" in (capabilities.extensions or {})
    assert protocol >= "2025-11-25"  # the current revisions
    by_uri = {s.uri: s for s in skills}
    assert set(by_uri) == {"skill://notes/SKILL.md", "skill://pdf-forms/SKILL.md"}  # not Bad_Name
    assert by_uri["skill://notes/SKILL.md"].frontmatter.description == "Keep notes."
    assert got.frontmatter.root["license"] == "MIT"
    folder = workspace / "skills" / "pdf-forms"
    files = {r.uri: r for r in got.resources}
    assert set(files) == {"skill://pdf-forms/SKILL.md", "skill://pdf-forms/scripts/fill.py"}
    for name in ("SKILL.md", "scripts/fill.py"):
        data = (folder / name).read_bytes()
        entry = files[f"skill://pdf-forms/{name}"]
        assert entry.digest == "sha256:" + hashlib.sha256(data).hexdigest()
        assert entry.size == len(data)
    assert body[0].text == "print('x')\n"


def test_the_bundled_skills_are_all_served(tmp_path: Path) -> None:
    """Every bundled skill meets the Agent Skills specification, so `lily mcp` serves it
    (issue 35: `plan_compiler` and `workspace_files` had no valid name and were left out)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    stdio = transport(workspace, tmp_path / "home")
    assert stdio.env is not None
    del stdio.env["LILY_SKILLS_BUNDLED_DIR"]  # the bundled root every person gets

    async def run() -> Any:
        async with Client(stdio, extensions=[SkillsClientExtension()]) as client:
            return await client.list_skills()

    by_uri = {s.uri: s for s in asyncio.run(run())}
    assert set(by_uri) == {"skill://echo/SKILL.md", "skill://plan-compiler/SKILL.md",
                           "skill://workspace-files/SKILL.md"}
    assert by_uri["skill://plan-compiler/SKILL.md"].frontmatter.description.startswith(
        "Turns the conversation so far into a structured")


def test_tools_under_the_policy_calls_logged_and_redacted(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path, "tools:\n  deny: [write]\n")

    async def work(client: Client[Any]) -> Any:
        tools = {t.name for t in await client.list_tools()}
        read = await client.call_tool("read", {"path": "data.txt"}, raise_on_error=False)
        shell = await client.call_tool("shell", {"command": "echo hi"}, raise_on_error=False)
        write = await client.call_tool("write", {"path": "x.txt", "content": "x"},
                                       raise_on_error=False)
        return tools, read, shell, write

    tools, read, shell, write = served(workspace, tmp_path / "home", work, LILY_EVENT_LOG="1")
    assert "read" in tools and "python" in tools and "shell" in tools
    assert "write" not in tools and "load_skill" not in tools
    assert not read.is_error and "the key is" in read.content[0].text
    assert SECRET not in read.content[0].text  # redacted as for the model
    assert shell.is_error  # asked by default: no one to ask through a client
    assert "needs the person's approval (asked by default)" in shell.content[0].text
    assert "name shell in tools.allow" in shell.content[0].text
    # An MCP client is no notebook: the refusal says why no one answers through it.
    assert "this notebook" not in shell.content[0].text
    assert "cannot ask the person through it (the client approves calls on its own)" in \
        shell.content[0].text
    assert write.is_error and not (workspace / "x.txt").exists()
    [log] = (workspace / ".lily" / "sessions").glob("*.jsonl")
    calls = [json.loads(line)["data"] for line in log.read_text().splitlines()
             if json.loads(line)["event"] == "tool_call"]
    # `write` is not listed: the SDK refuses the call before it reaches Lily.
    assert [(c["name"], c["allowed"]) for c in calls] == [("read", True), ("shell", False)]
    assert SECRET not in log.read_text()


def test_an_untrusted_workspace_serves_no_skill_of_its_own(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path, "tools:\n  allow: [read, list, write]\n")
    write_skill(tmp_path / "home" / ".lily" / "skills", "mine", "---\ndescription: Mine.\n---\n")

    async def work(client: Client[Any]) -> Any:
        skills = await client.list_skills()
        write = await client.call_tool("write", {"path": "planted.txt", "content": "x"},
                                       raise_on_error=False)
        return skills, write

    skills, write = served(workspace, tmp_path / "home", work, LILY_TRUST="")
    assert [s.uri for s in skills] == ["skill://mine/SKILL.md"]  # the person's own only
    assert write.is_error and "not trusted" in write.content[0].text
    assert not (workspace / "planted.txt").exists()


def test_a_file_swapped_after_listing_is_refused_never_waited_on(tmp_path: Path) -> None:
    """A skill file replaced, once listed, by a FIFO (no one writes to it), a link to a
    file outside the skill (the same bytes, so its digest matches), or a folder on its
    way replaced by a link: each read is refused at once, and the server goes on."""
    workspace = make_workspace(tmp_path)
    folder = workspace / "skills" / "pdf-forms"
    outside = tmp_path / "outside"
    (outside / "scripts").mkdir(parents=True)
    (outside / "fill.py").write_bytes(b"print('x')\n")
    (outside / "scripts" / "fill.py").write_bytes(b"print('x')\n")
    skill_md = (folder / "SKILL.md").read_bytes()
    (outside / "SKILL.md").write_bytes(skill_md)

    async def work(client: Client[Any]) -> Any:
        await client.list_skills()
        (folder / "SKILL.md").unlink()
        os.mkfifo(folder / "SKILL.md")
        (folder / "scripts" / "fill.py").rename(tmp_path / "fill.py")
        (folder / "scripts" / "fill.py").symlink_to(outside / "fill.py")
        said = []
        for uri in ("skill://pdf-forms/SKILL.md", "skill://pdf-forms/scripts/fill.py"):
            try:
                await asyncio.wait_for(client.read_resource(uri), 10)
                said.append("served")
            except TimeoutError:
                said.append("hung")
            except Exception as exc:  # noqa: BLE001 - the client's error for a refusal
                said.append(str(exc))
        (folder / "scripts" / "fill.py").unlink()
        (folder / "scripts").rmdir()
        (folder / "scripts").symlink_to(outside / "scripts")
        try:
            await asyncio.wait_for(client.read_resource("skill://pdf-forms/scripts/fill.py"), 10)
            said.append("served")
        except Exception as exc:  # noqa: BLE001
            said.append(str(exc))
        skills = await asyncio.wait_for(client.list_skills(), 10)  # still answering
        return said, skills

    said, skills = served(workspace, tmp_path / "home", work)
    assert "hung" not in said and "served" not in said, said
    assert "not a regular file" in said[0]
    assert "is now a link" in said[1] and "is now a link" in said[2]
    assert {s.uri for s in skills} == {"skill://notes/SKILL.md", "skill://pdf-forms/SKILL.md"}
