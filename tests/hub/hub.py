"""A real JupyterHub on 127.0.0.1 for tests and benchmarks/hub_spawn.py.

The hub reads docs/examples/jupyterhub_config.py, the file docs/deploy.md gives admins,
through a small config of its own that changes only who people are (the `dummy`
authenticator; a service token whose role creates, spawns and reaches servers), where
their homes are (`simple` spawner: `<base>/homes/<name>`), the loopback ports, and
`--allow-root` where the tests run as root. The proxy is the pure-Python
configurable-http-proxy. Everything goes through the proxy's one public port, as a
browser's requests would: the hub's REST API under /hub/api, each person's server
under /user/<name>/.

A failed spawn answers a bare 500: the hub's log (`Hub.log_text`) says why.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from tests.support.jupyter_server import free_port

__all__ = ["DOCUMENTED_CONFIG", "Hub", "person_processes", "start_hub"]

REPO = Path(__file__).resolve().parents[2]
DOCUMENTED_CONFIG = REPO / "docs" / "examples" / "jupyterhub_config.py"
SERVICE = "lily-tests"  # the service and its role (role names need three characters)
START_TIMEOUT = 180.0  # the hub, or one person's server, on a loaded 2-core machine

_OVERRIDES = """
load_subconfig({documented!r})
c.JupyterHub.authenticator_class = "dummy"
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {homes!r} + "/{{username}}"
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{hub_port}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.JupyterHub.db_url = "sqlite:///" + {base!r} + "/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = {base!r} + "/jupyterhub_cookie_secret"
c.JupyterHub.pid_file = {base!r} + "/jupyterhub.pid"
c.ConfigurableHTTPProxy.pid_file = {base!r} + "/proxy.pid"
c.JupyterHub.services = [{{"name": {service!r}, "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{"name": {service!r}, "services": [{service!r}],
    "scopes": ["admin:users", "admin:servers", "access:servers"]}}]
c.Spawner.start_timeout = {timeout}
c.Spawner.http_timeout = {timeout}
c.Spawner.args = [*c.Spawner.args, *{extra_args!r}]
"""


@dataclass
class Hub:
    """A running hub: the proxy's public URL, the service token, the process, its log."""

    url: str
    token: str
    process: subprocess.Popen[bytes]
    log: Path
    homes: Path

    def request(self, method: str, path: str, body: Any = None, timeout: float = 60) -> Any:
        """One REST call through the proxy (`path` from its root); the decoded JSON
        body, None when empty."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}{path}", data=data, method=method,
            headers={"Authorization": f"token {self.token}",
                     "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
            return json.loads(raw) if raw else None

    def home(self, name: str) -> Path:
        return self.homes / name

    def server_path(self, name: str) -> str:
        return f"/user/{name}"

    def ws_url(self, name: str, kernel_id: str) -> str:
        return (self.url.replace("http://", "ws://")
                + f"{self.server_path(name)}/api/kernels/{kernel_id}/channels")

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def spawn(self, name: str, timeout: float = START_TIMEOUT) -> dict[str, Any]:
        """Create `name` if new and start their server; its model once the hub says it
        is ready (the hub's log in the error otherwise)."""
        try:
            self.request("POST", f"/hub/api/users/{name}")
        except urllib.error.HTTPError as exc:
            if exc.code != 409:  # 409: the person exists already
                raise
        try:
            self.request("POST", f"/hub/api/users/{name}/server", timeout=timeout)
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"spawning {name}: HTTP {exc.code}; the hub's log:\n"
                                 f"{self.log_text()[-6000:]}") from exc
        server: dict[str, Any] = self._wait_for(
            name, lambda server: server is not None and server["ready"], "ready", timeout)
        return server

    def stop_server(self, name: str, timeout: float = START_TIMEOUT) -> None:
        """Stop `name`'s server and wait until the hub says it is gone."""
        self.request("DELETE", f"/hub/api/users/{name}/server", timeout=timeout)
        self._wait_for(name, lambda server: server is None, "stopped", timeout)

    def _wait_for(self, name: str, done: Any, what: str, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            server = self.request("GET", f"/hub/api/users/{name}")["servers"].get("")
            if done(server):
                return server
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise AssertionError(f"{name}'s server not {what} after {timeout:g} s "
                                     f"({server!r}); the hub's log:\n"
                                     f"{self.log_text()[-6000:]}")
            time.sleep(0.1)  # polling the hub's REST state; not synchronisation

    def stop(self) -> None:
        """Stop the hub: it stops every server and the proxy it started."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def _environment(base: Path, model_env: dict[str, str]) -> dict[str, str]:
    """The caller's environment less Lily's and Jupyter's variables, this virtualenv's
    bin first on PATH, the model settings the hub hands on (docs/examples)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LILY_", "JUPYTER_", "JPY_", "JUPYTERHUB_", "CONFIGPROXY_"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["HOME"] = str(base)  # the hub's own (its account's), never a person's
    env.update(model_env)
    return env


@contextmanager
def start_hub(base: Path, **model_env: str) -> Iterator[Hub]:
    """`with start_hub(base, LILY_MODEL=..., LILY_API_BASE=...) as hub:`; the hub runs
    in `base`, each person's home is `base/homes/<name>`."""
    homes = base / "homes"
    homes.mkdir(parents=True, exist_ok=True)
    port = free_port()
    token = secrets.token_hex(16)
    extra_args = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    config = base / "jupyterhub_config.py"
    config.write_text(_OVERRIDES.format(
        documented=str(DOCUMENTED_CONFIG), homes=str(homes), port=port,
        hub_port=free_port(), proxy_api_port=free_port(), base=str(base),
        service=SERVICE, token=token, timeout=int(START_TIMEOUT), extra_args=extra_args))
    log = base / "jupyterhub.log"
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(config), "--debug"],
            cwd=base, env=_environment(base, model_env), stdin=subprocess.DEVNULL,
            stdout=handle, stderr=subprocess.STDOUT)
    hub = Hub(f"http://127.0.0.1:{port}", token, process, log, homes)
    try:
        _wait_ready(hub)
        yield hub
    finally:
        hub.stop()


def _wait_ready(hub: Hub) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if hub.process.poll() is not None:
            raise RuntimeError(f"jupyterhub exited with {hub.process.returncode}:\n"
                               f"{hub.log_text()[-6000:]}")
        try:
            hub.request("GET", "/hub/api/", timeout=5)
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                raise RuntimeError(f"jupyterhub not ready after {START_TIMEOUT:g} s:\n"
                                   f"{hub.log_text()[-6000:]}") from None
            time.sleep(0.25)  # polling a port that is not open yet; not synchronisation


def person_processes(home: Path) -> list[psutil.Process]:
    """Every process on the machine that belongs to the person whose home is `home`: its
    HOME is there, or its command line or working folder names a path in it."""
    marker = str(home)
    found = []
    for process in psutil.process_iter():
        try:
            cwd = process.cwd()
            if (process.environ().get("HOME") == marker
                    or any(marker in part for part in process.cmdline())
                    or cwd == marker or cwd.startswith(marker + os.sep)):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found
