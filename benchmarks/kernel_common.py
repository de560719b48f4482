"""Shared pieces of the kernel benchmarks: generated workspaces and timed kernels.

Every kernel gets a private HOME and no LILY_* variable from the caller, the event log
off, and is driven through jupyter_client exactly as JupyterLab would.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from queue import Empty
from typing import Any

from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.kernelspec import KernelSpecManager
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
    # The benchmark trusts the workspace it builds, as a runner does (docs/skills.md).
    env.update(HOME=str(home), LILY_EVENT_LOG="0", LILY_TRUST="workspace")
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
        reply = reply_to(self.kc, msg_id)
        while True:
            msg = self.kc.get_iopub_msg(timeout=TIMEOUT)
            if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
                    and msg["content"]["execution_state"] == "idle"):
                content: dict[str, object] = reply["content"]
                if content["status"] != "ok":
                    raise RuntimeError(f"{code!r} failed: {content}")
                return content


def reply_to(kc: BlockingKernelClient, msg_id: str, timeout: float = TIMEOUT) -> dict[str, Any]:
    """The shell reply to `msg_id`, past the kernel_info replies `wait_for_kernel_info`
    left queued (it asks again every 0.5 s: on a busy machine more than one comes)."""
    while True:
        reply: dict[str, Any] = kc.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply
        if reply["msg_type"] != "kernel_info_reply":
            raise RuntimeError(f"a reply to another request: {reply['msg_type']}")


def wait_for_kernel_info(kc: BlockingKernelClient) -> float:
    """Ask for kernel_info until the reply comes; return when it did (perf_counter).

    Not `wait_for_ready`: that also waits for 0.2 s of silence on iopub afterwards,
    which would add the same fixed 200 ms to both sides of every comparison.
    """
    deadline = time.perf_counter() + TIMEOUT
    while time.perf_counter() < deadline:
        msg_id = kc.kernel_info()
        try:
            while True:
                reply = kc.get_shell_msg(timeout=0.5)
                if reply["parent_header"].get("msg_id") == msg_id:
                    return time.perf_counter()
        except Empty:
            continue
    raise TimeoutError("no kernel_info reply")


def noop_kernelspecs(root: Path) -> KernelSpecManager:
    """Kernelspecs where "noop" is benchmarks/noop_kernel.py (and the installed ones)."""
    spec = root / "kernels" / "noop"
    spec.mkdir(parents=True, exist_ok=True)
    script = Path(__file__).resolve().parent / "noop_kernel.py"
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, str(script), "-f", "{connection_file}"],
        "display_name": "noop", "language": "noop", "interrupt_mode": "signal",
    }))
    specs = KernelSpecManager()
    specs.kernel_dirs = [str(root / "kernels"), *specs.kernel_dirs]
    return specs


@contextmanager
def started(kernel_name: str, cwd: Path, env: dict[str, str], *, flush: bool = True,
            specs: KernelSpecManager | None = None) -> Iterator[Kernel]:
    """Start a kernel and wait until it is ready, timing that.

    flush=True: jupyter_client's `wait_for_ready` (kernel_info reply, then 0.2 s of iopub
    silence, so that iopub is subscribed); flush=False: the kernel_info reply only.
    """
    began = time.perf_counter()
    km = (KernelManager(kernel_name=kernel_name) if specs is None else
          KernelManager(kernel_name=kernel_name, kernel_spec_manager=specs))
    km.start_kernel(cwd=str(cwd), env=env)
    kc = km.client()
    kc.start_channels()
    try:
        if flush:
            kc.wait_for_ready(timeout=TIMEOUT)
            ready_after = time.perf_counter() - began
        else:
            ready_after = wait_for_kernel_info(kc) - began
        yield Kernel(km, kc, ready_after)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def median(values: list[float]) -> float:
    return statistics.median(values)
