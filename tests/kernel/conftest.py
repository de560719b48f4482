"""Kernel fixtures: real Lily kernel processes started through jupyter_client.

Every kernel gets its own HOME (so ~/.lily and ~/.ipython never leak in or out), no
LILY_* variable from the caller, and the event log off unless a test turns it on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager, start_new_kernel

from tests.conftest import write_skill

REPO = Path(__file__).resolve().parents[2]
# How long a kernel test waits for one message before it fails: a bound for a failure
# (a passing test gets its message as soon as it comes). 30 s failed whole modules at
# load 20 on 2 cores (one late reply, then every later test read it as its own).
TIMEOUT = 120
HOSTILE = "<img src=x onerror=alert(1)>"
# Environment for a kernel started as if Lily were installed without its `local` extra;
# the checkout under test comes next, so the kernel runs this code whatever is installed.
WITHOUT_LOCAL_MODEL = {"PYTHONPATH": os.pathsep.join(
    (str(REPO / "tests" / "support" / "hide_local_model"), str(REPO)))}


def kernel_env(home: Path, **extra: str) -> dict[str, str]:
    """The caller's environment without LILY_*, with a private HOME and Lily home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LILY_")}
    home.mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home), LILY_HOME=str(home / ".lily"), LILY_EVENT_LOG="0",
               LILY_TRUST="workspace")  # as CI runs notebooks (tests/llm/test_kernel_trust.py)
    env.update(extra)
    return env


@dataclass
class Execution:
    """One executed cell: the execute_reply content and its iopub output messages."""

    reply: dict[str, Any]
    outputs: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def status(self) -> str:
        return str(self.reply["status"])

    def of_type(self, msg_type: str) -> list[dict[str, Any]]:
        return [m["content"] for m in self.outputs if m["msg_type"] == msg_type]

    @property
    def displays(self) -> list[dict[str, str]]:
        return [c["data"] for c in self.of_type("display_data")]

    @property
    def plain(self) -> str:
        return "\n".join(d["text/plain"] for d in self.displays)


class LilyProcess:
    """A running Lily kernel and a blocking client talking to it."""

    def __init__(self, km: KernelManager, kc: BlockingKernelClient, workspace: Path) -> None:
        self.km = km
        self.kc = kc
        self.workspace = workspace

    def reply_to(self, msg_id: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The shell reply to `msg_id`. A kernel_info reply before it is left over from
        the start (jupyter_client asks again when iopub is slow to connect, on a busy
        machine): skipped; any other reply to another request is a failure."""
        while True:
            reply: dict[str, Any] = self.kc.get_shell_msg(timeout=timeout)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply
            assert reply["msg_type"] == "kernel_info_reply", reply

    def execute(self, code: str, timeout: float = TIMEOUT, **options: Any) -> Execution:
        began = time.monotonic()
        msg_id = self.kc.execute(code, **options)
        reply = self.reply_to(msg_id, timeout)
        result = Execution(reply["content"], seconds=time.monotonic() - began)
        while True:
            msg = self.kc.get_iopub_msg(timeout=timeout)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status":
                if msg["content"]["execution_state"] == "idle":
                    return result
                continue
            if msg["msg_type"] != "execute_input":
                result.outputs.append(msg)

    def interrupt_until_reply(self, msg_id: str, timeout: float = 120) -> dict[str, Any]:
        """The stop button, pressed until the cell `msg_id` answers: an interrupt that
        lands before the cell's handler is in place (a loaded machine) is pressed again,
        as a person would; one that lands after it ends finds the kernel idle (ignored).
        The reply to `msg_id`."""
        deadline = time.monotonic() + timeout
        while True:
            self.km.interrupt_kernel()
            try:
                return self.reply_to(msg_id, timeout=1.0)
            except Empty:
                assert time.monotonic() < deadline, f"no reply {timeout:g} s after the stop"

    def request(self, method: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """A shell request (complete, inspect, history, kernel_info, is_complete)."""
        msg_id = getattr(self.kc, method)(*args, **kwargs)
        content: dict[str, Any] = self.reply_to(msg_id)["content"]
        return content

    def drain_iopub(self) -> None:
        while True:
            try:
                self.kc.get_iopub_msg(timeout=0.2)
            except Empty:
                return


@contextmanager
def lily_kernel(workspace: Path, home: Path, **env: str) -> Iterator[LilyProcess]:
    """Start a Lily kernel with `workspace` as its working directory."""
    km, kc = start_new_kernel(kernel_name="lily", cwd=str(workspace),
                              env=kernel_env(home, **env), startup_timeout=180)
    try:
        yield LilyProcess(km, kc, workspace)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def make_shared_workspace(root: Path) -> Path:
    """Skills for the message tests: a hostile summary, an alias, a broken file, an agent."""
    workspace = root / "workspace"
    skills = workspace / "skills"
    write_skill(skills, "hostile", f"---\nsummary: '{HOSTILE}'\n---\n\nBody.\n")
    write_skill(skills, "greeter", "---\nsummary: Say hello.\ncommand: hi\n---\n\nGreet.\n")
    write_skill(skills, "broken", "---\nsummary: [unclosed\n---\n\nBody.\n")
    (workspace / "persona" / "critic").mkdir(parents=True)
    (workspace / "persona" / "critic" / "SOUL.md").write_text("You are a critic.\n")
    (workspace / "notes.txt").write_text("hello\n")
    return workspace


@pytest.fixture(scope="session")
def shared_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LilyProcess]:
    """One kernel for the tests that only read the session (commands that fail change
    nothing, which the tests check too). Started without the local extra, so a chat
    cell reports that no model is configured."""
    root = tmp_path_factory.mktemp("shared")
    with lily_kernel(make_shared_workspace(root), root / "home", **WITHOUT_LOCAL_MODEL) as kernel:
        yield kernel
