"""Benchmark, issue 36's goal for packages: `pip install` of a local wheel from a loopback
package index through the proxy, against the same install outside the sandbox, in one run:

    .venv/bin/python benchmarks/pip_install.py [--samples 5]

A PEP 503 index (`python -m http.server`, a process of its own) serves one pure-Python
wheel built here. Each sample installs it into a fresh workspace's environment
(`.lily/venv`, execution/installs.py, over Lily's own): once as the shell tool runs it
(bubblewrap, the session's proxy bound in, the bridge, the proxy variables, the
environment's bin/ first on PATH, `pip install --index-url http://127.0.0.1:<port>/simple/`),
once directly on the host with the same interpreter, pip and command line. The two are
interleaved; no pip cache on either side. Target: in the sandbox <= 1.3x outside.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from network_proxy import decide, file_server  # beside it, as kernel_common is

from lily_kernel.execution.environments import lilys_environment
from lily_kernel.execution.installs import prepare_environment
from lily_kernel.execution.limits import Limits
from lily_kernel.execution.plan import plan_process
from lily_kernel.execution.runner import run_process
from lily_kernel.execution.sandbox import Sandbox, find_sandbox
from lily_kernel.execution.way_out import WayOut
from lily_kernel.network.proxy import BRIDGE, SessionProxy
from tests.support.wheels import build_wheel, link_wheel

NAME = "lilybench"


def build_index(folder: Path) -> None:
    """A simple index in `folder` whose one project links its wheel."""
    link_wheel(folder, NAME, build_wheel(folder / "files", NAME))


def _command(port: int) -> str:
    return (f"pip install --no-cache-dir --index-url http://127.0.0.1:{port}/simple/ "
            f"{NAME} >/dev/null")


def in_sandbox(workspace: Path, sandbox: Sandbox, port: int) -> float:
    environ = dict(os.environ)
    python = prepare_environment(lilys_environment(), workspace, environ)
    plan = plan_process(["/bin/sh", "-c", _command(port)], workspace, [], environ, sandbox,
                        limits=Limits(), python=python)
    started = time.perf_counter()
    result = asyncio.run(run_process(plan, 600))
    took = time.perf_counter() - started
    if result.exit_code != 0:
        sys.exit(f"the sandboxed install failed: {result.output[-2000:]}")
    return took


def outside(workspace: Path, home: Path, port: int) -> float:
    python = prepare_environment(lilys_environment(), workspace, dict(os.environ))
    env = python.applied({"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home),
                          "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"})
    started = time.perf_counter()
    subprocess.run(["/bin/sh", "-c", _command(port)], cwd=workspace, env=env, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=5)
    args = parser.parse_args()
    found = find_sandbox(os.environ)
    if found.bwrap is None:
        sys.exit(f"needs bubblewrap ({found.reason})")
    with tempfile.TemporaryDirectory(prefix="lily-bench-pip-") as scratch:
        root = Path(scratch)
        served, folder, home = root / "index", root / "net", root / "home"
        for made in (served, folder, home):
            made.mkdir()
        build_index(served)
        proxy = SessionProxy.start(folder, decide, lambda finished: None)
        sandbox = Sandbox(found.bwrap, "", WayOut(proxy.socket, BRIDGE))
        boxed: list[float] = []
        direct: list[float] = []
        try:
            with file_server(served) as port:
                for sample in range(args.samples):
                    for kind, times in (("box", boxed), ("host", direct)):
                        workspace = root / f"ws-{kind}-{sample}"
                        workspace.mkdir()
                        times.append(in_sandbox(workspace, sandbox, port) if kind == "box"
                                     else outside(workspace, home, port))
                        shutil.rmtree(workspace)
        finally:
            proxy.stop()
    inside, host = statistics.median(boxed), statistics.median(direct)
    print(f"pip install through the proxy, in the sandbox: median {inside * 1000:.0f} ms, "
          f"min {min(boxed) * 1000:.0f} ms over {args.samples}")
    print(f"pip install outside the sandbox: median {host * 1000:.0f} ms, "
          f"min {min(direct) * 1000:.0f} ms over {args.samples}")
    print(f"ratio sandbox / outside: {inside / host:.2f}x by the medians, "
          f"{min(boxed) / min(direct):.2f}x by the minimums (target <= 1.3x)")


if __name__ == "__main__":
    main()
