"""The person's environment as the kernel, the shell and pip meet it (#36, items 2 and 3):
a venv under the home folder or /tmp named as `python_kernel` (by its folder, and by a
kernelspec's name) starts and runs code; the shell's `python` and `pip` are the kernel's;
`pip install` of a wheel the test builds lands in the workspace's environment, imports in
the running kernel and in the shell, and leaves Lily's own environment and the person's
untouched. Real bubblewrap, real IPython subkernels, the real gate."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lily_kernel.config import NetworkConfig
from lily_kernel.events import EventLog
from lily_kernel.execution.installs import INSTALLS
from lily_kernel.execution.limits import Limits, RunSettings
from lily_kernel.execution.python_host import PythonHost
from lily_kernel.execution.runner import ScriptHost
from lily_kernel.execution.sandbox import find_sandbox
from lily_kernel.execution.way_out import WayOut
from lily_kernel.network.decisions import Destination, Finished, Verdict
from lily_kernel.network.policy import NetworkPolicy
from lily_kernel.network.proxy import BRIDGE, SessionProxy
from lily_kernel.prompting import tool_result_text
from lily_kernel.runtime.tool_gate import ToolGate
from lily_kernel.tools import Hosts, ToolContext, default_registry
from tests.network.servers import file_server
from tests.support.shell_gate import shell_policy
from tests.support.sink import RecordingSink
from tests.support.wheels import build_wheel, link_wheel

VERSION = "{}.{}".format(*sys.version_info[:2])
LILYS_SITE = Path(sys.prefix) / "lib" / f"python{VERSION}" / "site-packages"

pytestmark = pytest.mark.skipif(
    not find_sandbox(os.environ).available and os.environ.get("CI") != "true",
    reason=f"no working bubblewrap here ({find_sandbox(os.environ).reason})")


def make_venv(folder: Path, *, ipykernel: bool = True) -> Path:
    """A real venv (`python -m venv`), holding a module of its own (`dsmarker`): only its
    own site-packages has it. Its ipykernel (and pip) are Lily's, through a `.pth` file,
    as a venv made with --system-site-packages over an environment would have them."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    site = folder / "lib" / f"python{VERSION}" / "site-packages"
    (site / "dsmarker.py").write_text(f"WHERE = {str(folder)!r}\n")
    if ipykernel:
        (site / "from_lily.pth").write_text(f"{LILYS_SITE}\n")
    return folder


@dataclass
class Session:
    """A session's two hosts wired as runtime/services.py wires them: the shell's runs
    get the kernel's environment."""

    workspace: Path
    kernel: PythonHost
    scripts: ScriptHost

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[str, str]:
        """The model's call through the real gate, allowed: its status and its text."""
        context = ToolContext(self.workspace, services=Hosts(self.scripts, self.kernel))
        gate = ToolGate(default_registry(), shell_policy(allow=("python", "shell")),
                        context, EventLog(None, "test"))
        outcome = asyncio.run(gate.run(RecordingSink(), tool, arguments, "model",
                                       offered=[tool]))
        return outcome.status, tool_result_text(outcome.status, outcome.text)

    def python(self, code: str) -> str:
        status, text = self.call("python", {"code": code})
        assert status == "ran", text
        return text

    def shell(self, command: str) -> str:
        status, text = self.call("shell", {"command": command})
        assert status == "ran", text
        return text


@pytest.fixture
def session_of(workspace: Path) -> Iterator[Any]:
    made: list[PythonHost] = []

    def start(kernel: str | None, environ: dict[str, str],
              way_out: WayOut | None = None) -> Session:
        settings = RunSettings(240, limits=Limits())
        scripts = ScriptHost(environ, settings, way_out=(lambda: way_out) if way_out else None)
        host = PythonHost(environ, workspace, [], scripts.sandbox, kernel, settings=settings)
        scripts.python = host.python_environment
        made.append(host)
        return Session(workspace, host, scripts)

    yield start
    for host in made:
        host.close()


def _said(text: str) -> dict[str, Any]:
    line = next(line for line in text.splitlines() if line.startswith("{"))
    return dict(json.loads(line))


_WHERE = ("import json, sys, dsmarker; print(json.dumps({'prefix': sys.prefix, "
          "'base': sys.base_prefix, 'marker': dsmarker.WHERE}))")


def test_a_venv_under_home_named_by_its_folder_is_the_kernels_and_the_shells(
        session_of: Any, workspace: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    venv = make_venv(home / ".venvs" / "ds")
    session = session_of("~/.venvs/ds", {"HOME": str(home), "PATH": "/usr/bin:/bin"})
    kernel = _said(session.python(_WHERE))
    installs = str(workspace.resolve() / INSTALLS)
    assert kernel == {"prefix": installs, "base": os.path.realpath(sys.base_prefix),
                      "marker": str(venv)}
    shell = _said(session.shell(f"python -c \"{_WHERE}\""))
    assert shell == kernel
    which = session.shell("command -v python; command -v pip")
    assert f"{installs}/bin/python\n{installs}/bin/pip\n" in which
    # The model reads which module is missing, and that installing needs the person.
    status, text = session.call("python", {"code": "import polars_not_here"})
    assert "the module 'polars_not_here' is not installed" in text, (status, text)


def test_a_venv_under_tmp_named_by_a_kernelspec_starts(
        session_of: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    venv = make_venv(tmp_path / "venvs" / "ds2")
    spec = tmp_path / "jupyter" / "kernels" / "ds2"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(venv / "bin" / "python"), "-m", "ipykernel_launcher", "-f",
                 "{connection_file}"], "display_name": "Python (ds2)", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    session = session_of("ds2", {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"})
    assert _said(session.python(_WHERE))["marker"] == str(venv)


def test_an_environment_without_ipykernel_says_the_command_that_adds_it(
        session_of: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    venv = make_venv(tmp_path / "home" / ".venvs" / "bare", ipykernel=False)
    environ = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    status, text = session_of("~/.venvs/bare", environ).call("python", {"code": "1"})
    assert status != "ran"
    assert f"`{venv}/bin/python -m pip install ipykernel`" in text, text
    spec = tmp_path / "jupyter" / "kernels" / "bare"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(venv / "bin" / "python"), "-m", "ipykernel_launcher", "-f",
                 "{connection_file}"], "display_name": "Bare", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    status, text = session_of("bare", environ).call("python", {"code": "1"})
    assert status != "ran" and "-m pip install ipykernel" in text, text


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def test_pip_installs_into_the_workspaces_environment_for_the_kernel_and_the_shell(
        session_of: Any, workspace: Path, tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "home" / ".venvs" / "ds")
    build_wheel(workspace / "wheels", "lilywheelone")
    build_wheel(workspace / "wheels", "lilywheeltwo")
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    before = {"lily": _files(LILYS_SITE), "venv": _files(venv)}
    session = session_of("~/.venvs/ds", {"HOME": str(tmp_path / "home"),
                                         "PATH": "/usr/bin:/bin"})
    assert "No module named 'lilywheelone'" in session.call(
        "python", {"code": "kept = 7\nimport lilywheelone"})[1]  # a kernel before the install
    installed = session.shell("pip install --no-index --find-links wheels lilywheelone")
    assert "Successfully installed lilywheelone-1.0" in installed, installed
    assert "42 " + str(workspace.resolve() / INSTALLS) + " 7" in session.python(
        "import lilywheelone, sys; print(lilywheelone.VALUE, sys.prefix, kept)")  # same kernel
    assert "42" in session.shell("python -c 'import lilywheelone; print(lilywheelone.VALUE)'")
    # From Python too (`%pip`, as a notebook does), into the same environment.
    assert "Successfully installed lilywheeltwo" in session.python(
        "%pip install --no-index --find-links wheels lilywheeltwo")
    assert "42" in session.shell("python -c 'import lilywheeltwo; print(lilywheeltwo.VALUE)'")
    site = workspace / INSTALLS / "lib" / f"python{VERSION}" / "site-packages"
    assert (site / "lilywheelone" / "__init__.py").is_file()
    assert (site / "lilywheeltwo" / "__init__.py").is_file()
    # Lily's own environment and the person's venv are as they were; git ignores it all.
    assert {"lily": _files(LILYS_SITE), "venv": _files(venv)} == before
    status = subprocess.run(["git", "-C", str(workspace), "status", "--porcelain",
                             "--untracked-files=all"], capture_output=True, text=True,
                            check=True).stdout
    assert ".lily" not in status and "wheels/" in status


def package_index(folder: Path, *names: str) -> Path:
    """A PEP 503 simple index in `folder`: each name's page links its wheel (built here)
    with its sha256, as an index serves them."""
    for name in names:
        link_wheel(folder, name, build_wheel(folder / "files", name))
    return folder


@contextmanager
def session_proxy(folder: Path, allow: tuple[str, ...], finished: list[Finished]
                  ) -> Iterator[WayOut]:
    """The session's proxy deciding by network.allow (a host it does not name refused:
    no one is asked here), each ending connection noted in `finished`."""
    policy = NetworkPolicy.from_config(NetworkConfig(allow=allow))

    def decide(destination: Destination) -> Verdict:
        return policy.verdict(destination, auto=True) or Verdict(False, "policy", "no")

    folder.mkdir()
    proxy = SessionProxy.start(folder, decide, finished.append)
    try:
        yield WayOut(proxy.socket, BRIDGE)
    finally:
        proxy.stop()


def test_pip_installs_from_a_loopback_index_the_policy_names_through_the_proxy(
        session_of: Any, workspace: Path, tmp_path: Path) -> None:
    """The whole way (#36 items 1 and 3): pip in the sandbox, the proxy, a loopback index
    named in network.allow, the workspace's environment; the kernel imports it."""
    make_venv(tmp_path / "home" / ".venvs" / "ds")
    index = package_index(tmp_path / "index", "lilyproxied")
    finished: list[Finished] = []
    environ = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    with file_server(index) as port, session_proxy(
            tmp_path / "net", (f"127.0.0.1:{port}",), finished) as way_out:
        session = session_of("~/.venvs/ds", environ, way_out)
        installed = session.shell(
            f"pip install --index-url http://127.0.0.1:{port}/simple/ lilyproxied")
        assert "Successfully installed lilyproxied-1.0" in installed, installed
        assert "42" in session.python("import lilyproxied; print(lilyproxied.VALUE)")
        refused = session.shell("pip install --retries 0 --timeout 5 --index-url "
                                "https://pypi.org/simple/ lilynothere; echo exit=$?")
    assert "exit=1" in refused
    hosts = {(f.destination.host, f.destination.port, f.verdict.allowed) for f in finished}
    assert ("127.0.0.1", port, True) in hosts and ("pypi.org", 443, False) in hosts


@pytest.mark.slow
def test_the_pip_benchmark_prints_its_ratio() -> None:
    """benchmarks/pip_install.py still runs (one sample) and prints the figure
    docs/benchmarks.md records; no timing is asserted here."""
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, str(repo / "benchmarks" / "pip_install.py"),
                           "--samples", "1"], cwd=repo, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ratio sandbox / outside:" in done.stdout
