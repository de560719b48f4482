"""Shared pieces of the kernel benchmarks: generated workspaces and timed kernels.

Every kernel gets a private HOME and no LILY_* variable from the caller, the event log
off, and is driven through jupyter_client exactly as JupyterLab would.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager

TIMEOUT = 60


def generate_workspace(root: Path, skills: int) -> Path:
    """A workspace with `skills` generated skill folders."""
    workspace = root / "workspace"
    for i in range(skills):
        folder = workspace / "skills" / f"skill_{i:05d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nsummary: Generated skill number {i}.\ndescription: A generated skill "
            f"for benchmarks, number {i}.\n---\n\n# Skill {i}\n\nDo step {i} carefully.\n",
            encoding="utf-8",
        )
    workspace.mkdir(parents=True, exist_ok=True)
    return workspace


def bench_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LILY_")}
    home.mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home), LILY_EVENT_LOG="0")
    return env


@dataclass
class Kernel:
    km: KernelManager
    kc: BlockingKernelClient
    ready_after: float  # seconds from start to the kernel_info reply

    @property
    def pid(self) -> int:
        return int(self.km.provisioner.process.pid)  # type: ignore[union-attr]

    def execute(self, code: str) -> dict[str, object]:
        """Run a cell; return its reply once the kernel is idle again (a full round trip)."""
        msg_id = self.kc.execute(code)
        reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        while True:
            msg = self.kc.get_iopub_msg(timeout=TIMEOUT)
            if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
                    and msg["content"]["execution_state"] == "idle"):
                content: dict[str, object] = reply["content"]
                if content["status"] != "ok":
                    raise RuntimeError(f"{code!r} failed: {content}")
                return content


@contextmanager
def started(kernel_name: str, cwd: Path, env: dict[str, str]) -> Iterator[Kernel]:
    """Start a kernel and wait for its kernel_info reply, timing that."""
    began = time.perf_counter()
    km = KernelManager(kernel_name=kernel_name)
    km.start_kernel(cwd=str(cwd), env=env)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
        yield Kernel(km, kc, time.perf_counter() - began)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def median(values: list[float]) -> float:
    return statistics.median(values)
