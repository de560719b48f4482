"""The kernel's start path stays light: no litellm, no openai, no debugpy, no MCP SDK or
nh3, and none of the sentence encoder's numpy and tokenizers (loaded with the first
ranking by meaning); the execution, record and MCP machinery loads with its first use."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_skill
from tests.kernel.conftest import kernel_env, lily_kernel

# Loaded with their first use (issue 35): a run (the sandbox, control groups, the Python
# kernel), an MCP server, a model's prompt or refusal, the record (a chat turn, /new,
# /resume: its modules, and sqlite3 for its index), the network's proxy and policy (a
# sandboxed run, the first network question); PyYAML with a lily.yaml or a SKILL.md
# frontmatter that is not plain lines (skills/plain_frontmatter.py; the bundled are);
# the kinds of event a start and a command do not log (a model's, a tool's, a change's,
# the record's: events/__init__.py); the built-in tools' modules, with a tool's first use
# (the policy is made from their records: tools/__init__.py BUILT_IN); the model seam's
# values and the scripted model, with the first chat cell (llm/__init__.py); the runner
# (and a run's settings), with the first run (runtime/services.py `scripts`).
LAZY = {"yaml", "lily_kernel.execution.sandbox", "lily_kernel.execution.mounts",
        "lily_kernel.execution.cgroups", "lily_kernel.execution.plan",
        "lily_kernel.execution.python_host", "lily_kernel.execution.subkernel",
        "lily_kernel.mcp_tools.session", "lily_kernel.prompting", "sqlite3",
        "lily_kernel.record.answers", "lily_kernel.record.index",
        "lily_kernel.record.keeper", "lily_kernel.record.notebook",
        "lily_kernel.record.shapes", "lily_kernel.record.turn_model",
        "lily_kernel.network.proxy", "lily_kernel.network.bridge",
        "lily_kernel.network.policy", "lily_kernel.network.decisions",
        "lily_kernel.network.asking", "lily_kernel.execution.way_out",
        "lily_kernel.events.model_kinds", "lily_kernel.events.tool_kinds",
        "lily_kernel.events.change_kinds", "lily_kernel.events.turns",
        "lily_kernel.tools.files", "lily_kernel.tools.load_skill", "lily_kernel.tools.python",
        "lily_kernel.tools.run_view", "lily_kernel.tools.scripts", "lily_kernel.tools.shell",
        "lily_kernel.tools.skill_files", "lily_kernel.llm.base", "lily_kernel.llm.records",
        "lily_kernel.llm.scripted", "lily_kernel.execution.runner",
        "lily_kernel.execution.limits", "lily_kernel.execution.launch"}

START = f"LAZY = {sorted(LAZY)!r}\n" + """
import json, sys
from lily_kernel.kernel.kernel import LilyKernel
kernel = LilyKernel()
runtime = kernel.lily.wait_started(timeout=60)
info = kernel.kernel_info
print(json.dumps({
    "started": runtime is not None,
    "features": info["supported_features"],
    "heavy": sorted({m.split(".")[0] for m in sys.modules}
                    & {"litellm", "openai", "debugpy", "numpy", "tokenizers", "mcp",
                       "fastmcp", "nh3", "h11"}),
    "lazy": sorted(set(sys.modules) & set(LAZY)),
}))
"""


def test_starting_a_session_and_answering_kernel_info_imports_nothing_heavy(
    tmp_path: Path,
) -> None:
    env = kernel_env(tmp_path / "home", LILY_WORKSPACE=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", START], env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"started": True, "features": [], "heavy": [], "lazy": []}


def test_a_client_that_never_asks_for_kernel_info_still_gets_a_session(tmp_path: Path) -> None:
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="lily")
    km.start_kernel(cwd=str(tmp_path), env=kernel_env(tmp_path / "home"))
    kc = km.client()
    kc.start_channels()
    try:
        msg_id = kc.execute("/skills")  # no kernel_info request first
        reply = kc.get_shell_msg(timeout=60)
        assert reply["parent_header"]["msg_id"] == msg_id
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


# Shared objects that litellm brings: pydantic's core (litellm, openai and Lily's tool
# schemas all import pydantic) and the tokenizer and JSON parser litellm's import loads.
HEAVY_LIBRARIES = ("pydantic_core", "_tiktoken", "jiter")


def _mapped_libraries(pid: int) -> set[str]:
    """Names of the shared objects mapped into process `pid` (what it has imported)."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return {Path(line.split()[-1]).name for line in maps.splitlines() if ".so" in line}


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux's /proc")
def test_the_start_path_loads_neither_pydantic_nor_litellm(tmp_path: Path) -> None:
    """SPEC §1: start, /skills, /help, /reload_skills, /agent and a tool_dispatch
    command run in a real kernel process without pydantic or litellm loaded in it.

    Read from the kernel process's own memory map: litellm cannot be imported without
    pydantic (it imports it at its top), so no pydantic_core there means no litellm."""
    workspace = tmp_path / "ws"
    write_skill(workspace / "skills", "lister",
                "---\nsummary: List.\ninvocation_mode: tool_dispatch\ncommand: files\n"
                "command_tool: list\n---\n")
    (workspace / "notes.txt").write_text("hi\n")
    with lily_kernel(workspace, tmp_path / "home") as kernel:
        for code in ("/skills", "/help", "/help lister", "/reload_skills", "/agent",
                     "/agent default", "/files", "/ls"):
            run = kernel.execute(code)
            assert run.status == "ok", (code, run.reply)
        assert "notes.txt" in run.plain  # /ls really ran its tool
        kernel.request("complete", "/sk", 3)
        kernel.request("inspect", "/help lister", 10)
        pid = kernel.km.provisioner.pid  # type: ignore[union-attr]
        libraries = _mapped_libraries(pid)
        assert "libzmq" in " ".join(libraries)  # the map is the kernel's, and readable
        loaded = [lib for lib in libraries if any(h in lib for h in HEAVY_LIBRARIES)]
        assert loaded == []
def _kernel_stderr(tmp_path: Path, ip: str) -> str:
    """Start a kernel listening on `ip` over TCP, run a cell, stop it: its stderr."""
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="lily", ip=ip, transport="tcp")
    log = tmp_path / f"stderr-{ip}.txt"
    with log.open("w") as stderr:
        km.start_kernel(cwd=str(tmp_path), env=kernel_env(tmp_path / "home"), stderr=stderr)
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=60)
            msg_id = kc.execute("/help")
            reply = kc.get_shell_msg(timeout=60)
            while reply["msg_type"] == "kernel_info_reply":  # left from a loaded start
                reply = kc.get_shell_msg(timeout=60)
            assert reply["parent_header"]["msg_id"] == msg_id
            assert reply["content"]["status"] == "ok"
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    return log.read_text()


def test_no_encryption_warning_on_loopback_but_kept_on_other_addresses(tmp_path: Path) -> None:
    assert "without encryption" not in _kernel_stderr(tmp_path, "127.0.0.1")
    assert "Kernel is running over TCP without encryption" in _kernel_stderr(tmp_path, "0.0.0.0")


def test_loopback_addresses() -> None:
    from lily_kernel.kernel.app import is_loopback

    assert all(map(is_loopback, ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "*", "::", "192.168.1.4", "10.0.0.1", ""]))
