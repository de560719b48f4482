"""The way out through real bubblewrap: the proxy's socket bound in, the bridge started
inside, the proxy variables set; curl and Python's urllib in the sandbox reach a
loopback server the policy names exactly and read Lily's reason for everything else,
fast. The sandbox keeps its own network: without the proxy nothing leaves it."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lily_kernel.execution.limits import Limits, RunSettings
from lily_kernel.execution.plan import plan_process
from lily_kernel.execution.runner import RunResult, ScriptHost, run_process
from lily_kernel.execution.sandbox import Sandbox
from lily_kernel.execution.way_out import PORT, WayOut
from lily_kernel.network.decisions import Destination, Verdict
from lily_kernel.network.proxy import BRIDGE, SessionProxy, refuse_everything
from tests.core.test_scripts import sandbox_or_skip
from tests.network.servers import file_server

CURL = "/usr/bin/curl"


def exact_loopback(destination: Destination) -> Verdict:
    """127.0.0.1 named exactly; every other host allowed by a pattern (not exactly)."""
    return Verdict(True, "policy", exact=destination.host == "127.0.0.1")


@pytest.fixture
def box(tmp_path: Path) -> Iterator[tuple[Sandbox, Path, Path]]:
    """A sandbox with the way out, its workspace, and the served folder."""
    found = sandbox_or_skip()
    folder = tmp_path / "net"
    folder.mkdir()
    proxy = SessionProxy.start(folder, exact_loopback, lambda finished: None)
    workspace, served = tmp_path / "workspace", tmp_path / "served"
    workspace.mkdir()
    served.mkdir()
    (served / "data.csv").write_text("a,b\n1,2\n")
    yield Sandbox(found.bwrap, "", WayOut(proxy.socket, BRIDGE)), workspace, served
    proxy.stop()


def run(command: list[str], sandbox: Sandbox, workspace: Path) -> RunResult:
    plan = plan_process(command, workspace, [], dict(os.environ), sandbox, limits=Limits())
    return asyncio.run(run_process(plan, 60))


def python(code: str) -> list[str]:
    return [sys.executable, "-I", "-c", code]


@pytest.mark.skipif(not os.path.exists(CURL), reason="curl is not installed")
def test_curl_in_the_sandbox_reaches_a_host_named_exactly(box) -> None:
    sandbox, workspace, served = box
    with file_server(served) as port:
        done = run([CURL, "-sS", f"http://127.0.0.1:{port}/data.csv"], sandbox, workspace)
    assert done.exit_code == 0 and done.output == "a,b\n1,2\n"


def test_urllib_in_the_sandbox_reaches_a_host_named_exactly(box) -> None:
    sandbox, workspace, served = box
    with file_server(served) as port:
        done = run(python("import urllib.request as u; print(u.urlopen("
                          f"'http://127.0.0.1:{port}/data.csv').read().decode(), end='')"),
                   sandbox, workspace)
    assert done.exit_code == 0 and done.output == "a,b\n1,2\n"


@pytest.mark.skipif(not os.path.exists(CURL), reason="curl is not installed")
def test_loopback_private_and_metadata_are_refused_with_the_reason(box) -> None:
    sandbox, workspace, served = box
    with file_server(served) as port:
        checks = {
            f"http://localhost:{port}/data.csv": "localhost resolves to 127.0.0.1, a loopback",
            "http://169.254.169.254/latest/meta-data/": "a cloud metadata address",
            "http://10.1.2.3/": "10.1.2.3, a private address",
        }
        script = "; ".join(f"{CURL} -sS '{url}'; echo" for url in checks)
        done = run(["/bin/sh", "-c", script], sandbox, workspace)
    for said in checks.values():
        assert "blocked by Lily's network policy: " in done.output and said in done.output


def test_a_refused_host_fails_fast_with_lilys_reason(box) -> None:
    # What pip, requests and urllib show: the tunnel's status line, with the reason.
    _, workspace, _ = box
    found = sandbox_or_skip()
    folder = workspace.parent / "net-refusing"
    folder.mkdir()
    proxy = SessionProxy.start(folder, refuse_everything, lambda finished: None)
    try:
        refusing = Sandbox(found.bwrap, "", WayOut(proxy.socket, BRIDGE))
        code = ("import time, urllib.request as u\nt = time.perf_counter()\ntry:\n"
                "    u.urlopen('https://pypi.org/simple/polars/')\nexcept Exception as e:\n"
                "    print(e)\nprint(round(time.perf_counter() - t, 3))")
        done = run(python(code), refusing, workspace)
    finally:
        proxy.stop()
    said, seconds = done.output.strip().splitlines()
    assert said == ("<urlopen error Tunnel connection failed: 403 blocked by Lily's network "
                    "policy: pypi.org (not allowed; ask the person or add it to "
                    "network.allow)>")
    assert float(seconds) < 0.5


def test_the_sandbox_sees_the_proxy_variables_and_no_other_way_out(box) -> None:
    sandbox, workspace, _ = box
    code = ("import os, socket\n"
            "print(sorted(k for k in os.environ if k.lower().endswith('_proxy')))\n"
            "print(os.environ['https_proxy'])\n"
            "s = socket.socket()\ntry:\n    s.connect(('1.1.1.1', 443))\n"
            "except OSError as e:\n    print('direct:', e.errno)")
    done = run(python(code), sandbox, workspace)
    names, url, direct = done.output.strip().splitlines()
    assert names == str(sorted(["ALL_PROXY", "HTTPS_PROXY", "HTTP_PROXY", "all_proxy",
                                "http_proxy", "https_proxy"]))
    assert url == f"http://127.0.0.1:{PORT}"
    assert direct.startswith("direct: ")  # the sandbox's own network: unreachable


def test_the_bridge_ends_with_the_run(box, tmp_path: Path) -> None:
    sandbox, workspace, _ = box
    marker = f"run-{tmp_path.name}"  # in the bridge's command line (it forks, never execs)

    def bridges() -> list[str]:
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"/run/lily-bridge.py" in command and marker.encode() in command:
                found.append(pid)
        return found

    done = run(["/bin/sh", "-c", f"echo started; ls /proc | grep -c . >/dev/null; : {marker}"],
               sandbox, workspace)
    assert done.exit_code == 0 and done.output == "started\n"
    assert bridges() == []


def test_the_script_host_gives_every_sandboxed_run_the_way_out(tmp_path: Path) -> None:
    found = sandbox_or_skip()
    way_out = WayOut(tmp_path / "proxy.sock", BRIDGE)
    host = ScriptHost(dict(os.environ), RunSettings(60.0), way_out=lambda: way_out)
    assert host.sandbox() == Sandbox(found.bwrap, "", way_out)
    assert ScriptHost(dict(os.environ), RunSettings(60.0)).sandbox().way_out is None


@pytest.mark.slow
def test_the_python_kernel_reaches_a_host_named_exactly(box) -> None:
    from lily_kernel.execution.python_host import PythonHost

    sandbox, workspace, served = box
    outputs: list[dict[str, object]] = []
    kernel = PythonHost(dict(os.environ), workspace, (), lambda: sandbox,
                        settings=RunSettings(120.0))
    try:
        with file_server(served) as port:
            reply = asyncio.run(kernel.run(
                "import urllib.request as u\n"
                f"print(u.urlopen('http://127.0.0.1:{port}/data.csv').read().decode(), end='')\n"
                f"try:\n    u.urlopen('https://localhost:{port}/')\nexcept Exception as e:\n"
                "    print(e)", outputs.append))
    finally:
        kernel.close()
    text = "".join(str(o.get("text", "")) for o in outputs)
    assert reply.status == "ok", (reply, text)
    assert text.startswith("a,b\n1,2\n")
    assert ("Tunnel connection failed: 403 blocked by Lily's network policy: localhost "
            "resolves to 127.0.0.1, a loopback address") in text
