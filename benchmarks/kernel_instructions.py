"""kernel_start.py's `--instructions` mode: the start counted in instructions, not time.

Each kernel (Lily, the do-nothing kernel) runs whole under valgrind's callgrind, started
and driven through jupyter_client as in the timed mode: start -> kernel_info reply ->
first cell (`/skills` over the generated workspace; `1+1`) -> its execute_reply. Two
dumps are taken with `callgrind_control`: when the kernel_info reply has come and when
the first cell's reply has. An instruction count does not depend on the machine's load
(the 2 cores are shared), so the ratio Lily / do-nothing taken from counts can be
compared from one run to the next where the wall-clock ratio cannot; it prices the work,
not the waits (ZeroMQ's reconnect ticks, jupyter_client's 0.2 s of iopub silence).

The kernel_info dump is approximate for Lily: its session starts on a thread while the
kernel answers, and callgrind runs one thread at a time, so how much of that thread had
run by the reply depends on the scheduling. The first cell's count does not: it waits
for the session.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from kernel_common import reply_to, started

TIMEOUT = 900  # seconds: callgrind runs a program ~50x slower than the bare CPU
SUMMARY = re.compile(rb"^(?:summary|totals):\s*(\d+)", re.MULTILINE)


def callgrind_kernelspecs(root: Path, specs: KernelSpecManager) -> KernelSpecManager:
    """Kernelspecs "<name>-callgrind" that run the lily and noop kernels under callgrind."""
    made = KernelSpecManager()
    made.kernel_dirs = [str(root / "kernels"), *specs.kernel_dirs]
    for name in ("lily", "noop"):
        spec = specs.get_kernel_spec(name)
        argv = [sys.executable if arg in ("python", "python3") else arg for arg in spec.argv]
        folder = root / "kernels" / f"{name}-callgrind"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "kernel.json").write_text(json.dumps({
            "argv": ["valgrind", "--tool=callgrind", "--quiet",
                     f"--callgrind-out-file={root}/{name}.%p.out", *argv],
            "display_name": f"{name} under callgrind", "language": spec.language,
            "interrupt_mode": "signal", "env": spec.env,
        }))
    return made


def _dump(pid: int, root: Path, name: str) -> int:
    """Instructions the kernel process `pid` ran since its last dump (callgrind_control)."""
    before = set(root.glob(f"{name}.{pid}.out*"))
    subprocess.run(["callgrind_control", "--dump", str(pid)], check=True,
                   capture_output=True, timeout=TIMEOUT)
    new = sorted(set(root.glob(f"{name}.{pid}.out*")) - before)
    if len(new) != 1:
        raise RuntimeError(f"callgrind_control wrote {new} for {name}")
    found = SUMMARY.search(new[0].read_bytes())
    if found is None:
        raise RuntimeError(f"no instruction total in {new[0]}")
    return int(found.group(1))


def count(name: str, code: str, cwd: Path, env: dict[str, str], root: Path,
          specs: KernelSpecManager) -> tuple[int, int]:
    """Instructions of kernel `name` from its start to the kernel_info reply, and to the
    reply of its first cell `code`."""
    km = KernelManager(kernel_name=f"{name}-callgrind", kernel_spec_manager=specs)
    km.start_kernel(cwd=str(cwd), env=env)
    kc = km.client()
    kc.start_channels()
    try:
        pid = int(km.provisioner.pid)  # type: ignore[union-attr]
        # One request, answered whenever the kernel listens (ZeroMQ queues it until then):
        # no repeated asking, whose replies would be counted too.
        reply_to(kc, kc.kernel_info(), timeout=TIMEOUT)
        to_info = _dump(pid, root, name)
        msg_id = kc.execute(code)
        reply = reply_to(kc, msg_id, timeout=TIMEOUT)
        assert reply["content"]["status"] == "ok", reply["content"]
        return to_info, to_info + _dump(pid, root, name)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def run(runs: int, workspace: Path, env: dict[str, str], root: Path,
        specs: KernelSpecManager) -> None:
    """Count both kernels `runs` times, in turn, and print the counts and their ratios."""
    made = callgrind_kernelspecs(root, specs)
    for name, code in (("lily", "/skills"), ("noop", "1+1")):  # .pyc written, not counted
        with started(name, workspace, env, specs=specs) as kernel:
            reply_to(kernel.kc, kernel.kc.execute(code))
    counts: dict[str, list[tuple[int, int]]] = {"lily": [], "noop": []}
    for _ in range(runs):
        for name, code in (("lily", "/skills"), ("noop", "1+1")):
            counts[name].append(count(name, code, workspace, env, root, made))
    for i, label in ((1, "start -> first cell's reply"), (0, "start -> kernel_info reply")):
        lily = sorted(c[i] for c in counts["lily"])[len(counts["lily"]) // 2]
        noop = sorted(c[i] for c in counts["noop"])[len(counts["noop"]) // 2]
        print(f"instructions, {label}: lily (/skills) {lily / 1e6:,.0f} M; the do-nothing "
              f"kernel (1+1) {noop / 1e6:,.0f} M; ratio {lily / noop:.3f}x (medians of "
              f"{runs}; every count: lily {[round(c[i] / 1e6) for c in counts['lily']]} M, "
              f"noop {[round(c[i] / 1e6) for c in counts['noop']]} M)")
