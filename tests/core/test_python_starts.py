"""Every Python Lily starts puts no working folder on sys.path as it starts (hardening round
four, #34): a folder's own `ipykernel_launcher.py`, or any module it holds, must never
run in place of Lily's. Each start is built by the function Lily uses for it, and each
Python in its command line is checked: `-P` or `-I` among its options, or PYTHONSAFEPATH
in its environment; or it runs a file by its path (sys.path[0] is then that file's own
folder, the skill's, never the working folder)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from lily_kernel.execution.cgroups import RunGroup
from lily_kernel.execution.kernelspec import choose_kernel
from lily_kernel.execution.limits import Limits, limited
from lily_kernel.execution.sandbox import Sandbox, unsandboxed
from lily_kernel.tools import ActiveSkill, ToolContext
from lily_kernel.tools.scripts import plan_script
from tests.conftest import FIXTURES

REPO = Path(__file__).resolve().parents[2]
Start = tuple[Sequence[str], Mapping[str, str]]  # a command line and its environment
_ARGUMENT = {"-W", "-X", "--check-hash-based-pycs"}  # options that take the next word


def _is_python(word: str) -> bool:
    return word == sys.executable or Path(word).name.startswith("python")


def _unsafe(argv: Sequence[str], env: Mapping[str, str]) -> str | None:
    """Why the Python at the start of `argv` would put a working folder on sys.path (None
    when it would not)."""
    options, rest = [], list(argv[1:])
    while rest and rest[0].startswith("-") and rest[0] not in ("-", "-m", "-c"):
        word = rest.pop(0)
        options.append(word)
        if word in _ARGUMENT and rest:
            rest.pop(0)
    flags = "".join(o[1:] for o in options if not o.startswith("--"))
    if "P" in flags or "I" in flags or env.get("PYTHONSAFEPATH"):
        return None
    if rest and rest[0] not in ("-m", "-c", "-") and os.path.isabs(rest[0]):
        return None  # a file by its path: its own folder first
    return f"{' '.join(argv[:4])} … starts with the working folder on sys.path"


def _lilys_own_kernel(tmp_path: Path) -> Start:
    choice = choose_kernel(None)
    return choice.argv, choice.env


def _a_kernelspecs_kernel(tmp_path: Path) -> Start:
    spec = tmp_path / "jupyter" / "kernels" / "mine"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": ["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Mine", "language": "python"}))  # (JUPYTER_PATH: the test's)
    choice = choose_kernel("mine")
    return choice.argv, choice.env


def _an_environment_by_its_path(tmp_path: Path) -> Start:
    """`python_kernel: ~/.venvs/ds` (no kernelspec; not asked where it lives without a
    sandbox, its command line is the same)."""
    import subprocess

    venv = tmp_path / "venvs" / "ds"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    choice = choose_kernel(str(venv), tmp_path, {"HOME": str(tmp_path)})
    return choice.argv, choice.env


def _kernelspec_file(path: Path) -> Start:
    spec = json.loads(path.read_text())
    return [sys.executable, *spec["argv"][1:]], spec.get("env", {})


def _installed_kernelspec(tmp_path: Path) -> Start:
    from lily_kernel.cli.install import install_kernelspec

    return _kernelspec_file(Path(install_kernelspec(prefix=str(tmp_path))) / "kernel.json")


def _skill_script(tmp_path: Path, sandbox: Sandbox) -> Start:
    folder = tmp_path / "skills" / "formfill"
    shutil.copytree(FIXTURES / "skill_files" / "formfill", folder)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    plan = plan_script(ActiveSkill("formfill", folder), "scripts/fill_form.py", ["a"],
                       ToolContext(workspace), {"PATH": os.environ.get("PATH", "")}, sandbox)
    return plan.argv, plan.env


def _mcp_server(tmp_path: Path) -> Start:
    """A stdio MCP server the person configured (`python -m their_server`), as Lily hands
    it to the SDK (mcp_tools/connection.py)."""
    from unittest import mock

    from lily_kernel.config import McpServerConfig
    from lily_kernel.mcp_tools.connection import McpConnection
    from lily_kernel.mcp_tools.servers import McpServer

    server = McpServer("theirs", "person", "stdio",
                       McpServerConfig(command=sys.executable, args=("-m", "their_server")))
    connection = McpConnection(server, tmp_path, {"PATH": os.environ.get("PATH", "")})
    connection._folder = tmp_path
    seen: dict[str, Any] = {}
    with mock.patch("mcp.client.stdio.stdio_client",
                    lambda params, errlog: seen.setdefault("params", params)):
        connection._transport(None)
    params = seen["params"]
    return [params.command, *params.args], params.env or {}


STARTS: dict[str, Callable[[Path], Start]] = {
    "the session's Python kernel (Lily's own)": _lilys_own_kernel,
    "the session's Python kernel (a kernelspec's)": _a_kernelspecs_kernel,
    "the session's Python kernel (an environment by its path)": _an_environment_by_its_path,
    "the limiter of a sandboxed run": lambda tmp: (limited(["true"], Limits()), {}),
    "the limiter joining a control group": lambda tmp: (RunGroup((tmp,)).argv(["true"]), {}),
    "the reaper of an unsandboxed run": lambda tmp: (unsandboxed(["true"]), {}),
    "Lily's kernelspec (jupyter, lily run)": lambda tmp: _kernelspec_file(
        REPO / "kernelspec" / "kernel.json"),
    "the kernelspec lily install writes": _installed_kernelspec,
    "a skill's Python script, sandboxed": lambda tmp: _skill_script(
        tmp, Sandbox("/usr/bin/bwrap", "")),
    "a skill's Python script, through the reaper": lambda tmp: _skill_script(
        tmp, Sandbox(None, "none")),
    "a stdio MCP server of the person's": _mcp_server,
}


@pytest.mark.parametrize("start", STARTS)
def test_no_python_lily_starts_puts_the_working_folder_on_its_path(
        start: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    argv, env = STARTS[start](tmp_path)
    pythons = [i for i, word in enumerate(argv) if _is_python(word)]
    assert pythons, f"no Python in {argv}"
    problems = [p for i in pythons if (p := _unsafe(argv[i:], env)) is not None]
    assert problems == []
