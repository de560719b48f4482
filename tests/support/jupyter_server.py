"""Start real Jupyter servers (JupyterLab + Notebook 7, or Kernel Gateway) on 127.0.0.1.

Each server is a child process of this virtualenv's Python with a private HOME and
private Jupyter config, data and runtime folders, no LILY_* variable from the caller,
a fixed token, a free port, and every feature that would reach the network off. It is
ready when its REST API answers; it is stopped (and its kernels with it) on exit.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["JupyterProcess", "free_port", "isolated_env", "start_gateway", "start_lab"]

TOKEN = "lily-test-token"
START_TIMEOUT = 120.0  # a loaded 2-core machine imports jupyter_server slowly

# JupyterLab's news toasts ask to reach jupyter.org: off in the page config.
PAGE_CONFIG = {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def isolated_env(home: Path, **extra: str) -> dict[str, str]:
    """The caller's environment without LILY_*/JUPYTER_*, with private Jupyter folders."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LILY_", "JUPYTER_", "JPY_"))}
    jupyter = home / ".jupyter-test"
    labconfig = jupyter / "config" / "labconfig"
    labconfig.mkdir(parents=True, exist_ok=True)
    (labconfig / "page_config.json").write_text(json.dumps(PAGE_CONFIG))
    env.update(HOME=str(home), LILY_HOME=str(home / ".lily"), LILY_EVENT_LOG="0",
               LILY_TRUST="workspace",
               JUPYTER_CONFIG_DIR=str(jupyter / "config"),
               JUPYTER_DATA_DIR=str(jupyter / "data"),
               JUPYTER_RUNTIME_DIR=str(jupyter / "runtime"),
               JUPYTER_PLATFORM_DIRS="1")
    env.update(extra)
    return env


@dataclass
class JupyterProcess:
    """A running server: its base URL, token, process and log file."""

    url: str
    token: str
    process: subprocess.Popen[bytes]
    log: Path

    def api(self, method: str, path: str, body: Any = None, timeout: float = 30) -> Any:
        """One REST call; returns the decoded JSON body (None for 204)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}{path}", data=data, method=method,
            headers={"Authorization": f"token {self.token}",
                     "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
            return json.loads(raw) if raw else None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # the servers shut their kernels down
            self.process.send_signal(signal.SIGINT)  # (a second ^C skips the y/n prompt)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def _spawn(args: Sequence[str], env: dict[str, str], cwd: Path, log: Path,
           url: str, ready_path: str) -> JupyterProcess:
    handle = log.open("wb")
    process = subprocess.Popen([sys.executable, "-m", *args], cwd=cwd, env=env,
                               stdin=subprocess.DEVNULL, stdout=handle,
                               stderr=subprocess.STDOUT)
    handle.close()
    server = JupyterProcess(url, TOKEN, process, log)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{args[0]} exited with {process.returncode}:\n{server.log_text()}")
        try:
            server.api("GET", ready_path, timeout=5)
            return server
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"{args[0]} not ready after {START_TIMEOUT:.0f} s:\n"
                                   f"{server.log_text()}") from None
            time.sleep(0.25)  # polling a port that is not open yet; not synchronisation


def start_lab(root: Path, home: Path, log: Path, **env: str) -> JupyterProcess:
    """JupyterLab (and Notebook 7, same server) serving `root`, fresh workspaces folder."""
    port = free_port()
    environ = isolated_env(home, **env)
    lab_state = home / ".jupyter-test" / "lab"
    # No news feed, no update check: JupyterLab would fetch both from the network.
    (Path(environ["JUPYTER_CONFIG_DIR"]) / "jupyter_lab_config.json").write_text(json.dumps(
        {"LabApp": {"news_url": None,
                    "check_for_updates_class": "jupyterlab.NeverCheckForUpdate"}}))
    args = ["jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
            f"--LabApp.workspaces_dir={lab_state / 'workspaces'}",
            f"--LabApp.user_settings_dir={lab_state / 'user-settings'}",
            "--ServerApp.terminals_enabled=False"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--allow-root")
    return _spawn(args, environ, root, log, f"http://127.0.0.1:{port}", "/api/status")


def start_gateway(root: Path, home: Path, log: Path, **env: str) -> JupyterProcess:
    """Jupyter Kernel Gateway with `lily` as the default kernel, kernels started in `root`."""
    port = free_port()
    args = ["kernel_gateway", "--KernelGatewayApp.ip=127.0.0.1",
            f"--KernelGatewayApp.port={port}", "--KernelGatewayApp.port_retries=0",
            f"--KernelGatewayApp.auth_token={TOKEN}",
            "--KernelGatewayApp.default_kernel_name=lily"]
    return _spawn(args, isolated_env(home, **env), root, log,
                  f"http://127.0.0.1:{port}", "/api")
