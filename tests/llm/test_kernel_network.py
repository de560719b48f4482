"""The network policy through a real Lily kernel (jupyter_client over ZeroMQ), the loopback
model scripting shell calls, real bubblewrap and the session's real proxy, and a loopback
file server: a host named in network.allow reached unasked; a host nobody named asked as
an `input_request` (n, y for the tool call's connections at once, a for the session), or
refused where no one can answer; a denied host and full auto refusing without a
question; `/network`; the `network` events; `lily replay` of the session, identical, then
diverging once today's policy denies the host; an untrusted lily.yaml's allow held."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lily_kernel.replay import replay_session
from tests.core.test_scripts import sandbox_or_skip
from tests.kernel.conftest import LilyProcess, kernel_env, lily_kernel
from tests.llm.test_kernel_skills import execute_answering, log_events
from tests.support.openai_server import OpenAIServer, Reply, tool_call

SECRET = "sk-kernel-network-SECRET-1234567890"
BLOCKED = "blocked by Lily's network policy"


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    sandbox_or_skip()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A loopback file server serving hello.txt; its port."""
    folder = tmp_path_factory.mktemp("served")
    (folder / "hello.txt").write_text("hello-lily\n")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()


def _settings(server: OpenAIServer, **env: str) -> dict[str, str]:
    return {"LILY_MODEL": "openai/kernel-network", "LILY_API_BASE": server.base_url,
            "OPENAI_API_KEY": SECRET, "LILY_STREAM": "0", "LILY_EVENT_LOG": "1",
            "LILY_RETRY_BACKOFF": "0.01", **env}


def _shell(server: OpenAIServer, command: str) -> None:
    server.replies.clear()
    server.script(Reply(tool_calls=[tool_call("shell", {"command": command})]),
                  Reply(text="Done."))


def _fetch(url: str, times: int = 1) -> str:
    return "; ".join([f"curl -sS -m 20 {url}"] * times) + "; true"


def _result(server: OpenAIServer) -> str:
    return str(server.requests[-1]["messages"][-1]["content"])


def _cell(kernel: LilyProcess, server: OpenAIServer, command: str,
          answers: list[str]) -> tuple[str, list[str], str]:
    """The model runs `command` in the shell; (what it read, the questions, the cell's
    text)."""
    _shell(server, command)
    run, prompts = execute_answering(kernel, "Go", answers)
    assert run.status == "ok", run.reply
    return _result(server), prompts, run.plain


def test_allowed_asked_denied_unattended_full_auto_and_replayed(
        server: OpenAIServer, files: int, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "lily.yaml").write_text(
        "tools:\n  allow: [shell, python]\nnetwork:\n  deny: [blocked.test]\n")
    allowed = f"127.0.0.1:{files}"
    settings = _settings(server, LILY_NETWORK_ALLOW=allowed)
    with lily_kernel(workspace, tmp_path / "home", **settings) as kernel:
        # Named in network.allow: reached, nobody asked.
        read, prompts, _ = _cell(kernel, server, _fetch(f"http://{allowed}/hello.txt"), [])
        assert prompts == [] and "hello-lily" in read
        # The session's Python kernel goes through the same proxy, under the same policy.
        server.replies.clear()
        server.script(Reply(tool_calls=[tool_call("python", {"code": (
            "import urllib.request\n"
            f"print(urllib.request.urlopen('http://{allowed}/hello.txt').read())")})]),
            Reply(text="Done."))
        run, prompts = execute_answering(kernel, "Go", [])
        assert run.status == "ok" and prompts == [] and "hello-lily" in _result(server)
        # Nobody named it: asked; no.
        unnamed = f"http://localhost:{files}/hello.txt"
        read, prompts, shown = _cell(kernel, server, _fetch(unnamed), ["n"])
        [question] = prompts
        assert question.startswith(f'Network: "shell" wants to connect to "localhost" port '
                                   f'{files}.') and question.endswith("[y/N/a] ")
        declined = f"{BLOCKED}: localhost (the person declined it for this run)"
        assert declined in read and f"Network: {declined}" in shown
        # y: for the tool call, its two connections asked once (then the proxy refuses
        # the loopback address the name resolves to: only an exact address opens it).
        read, prompts, _ = _cell(kernel, server, _fetch(unnamed, times=2), ["y"])
        assert len(prompts) == 1 and "resolves to 127.0.0.1, a loopback address" in read
        # a: for the session: the next tool call is not asked.
        assert len(_cell(kernel, server, _fetch(unnamed), ["a"])[1]) == 1
        assert _cell(kernel, server, _fetch(unnamed), [])[1] == []
        # Denied: refused, nobody asked.
        read, prompts, _ = _cell(kernel, server, _fetch("http://blocked.test/"), [])
        assert prompts == [] and f"{BLOCKED}: blocked.test (network.deny names it" in read
        # No one to answer (nbclient, lily run): refused, saying why.
        _shell(server, _fetch(f"http://localhost:{files + 1}/"))
        assert kernel.execute("Go", allow_stdin=False).status == "ok"
        assert "no one could be asked: this notebook runs without input requests" \
            in _result(server)
        # Full auto runs the shell unasked but opens no host nobody named.
        assert kernel.execute("/policy auto").status == "ok"
        read, prompts, _ = _cell(kernel, server, _fetch(f"http://localhost:{files + 2}/"), [])
        assert prompts == [] and "full auto opens no host that network.allow does not " \
            "name; add it to network.allow" in read
        listing = kernel.execute("/network").plain
        assert allowed in listing and "blocked.test" in listing and "localhost" in listing
        events = log_events(kernel, "network")
    seen = [(e["host"], e["port"], e["allowed"], e["decided_by"]) for e in events]
    assert seen[0] == ("127.0.0.1", files, True, "policy")
    assert events[0]["address"] == "127.0.0.1" and events[0]["bytes_received"] > 0
    assert ("localhost", files, False, "person") in seen
    assert ("localhost", files, False, "refused-address") in seen
    assert ("blocked.test", 80, False, "policy") in seen
    assert ("localhost", files + 1, False, "no-answer") in seen
    assert [e["tool"] for e in events][:2] == ["shell", "python"]
    assert all(e["tool"] == "shell" for e in events[2:])
    # The session replayed: the network decided again, the same way.
    [log] = (workspace / ".lily" / "sessions").glob("*.jsonl")
    environ = kernel_env(tmp_path / "home", **settings)
    report = replay_session(log, environ=environ)
    assert report.identical, report.describe()
    # Today's lily.yaml denies the host the session reached: the recorded event granted
    # nothing, the replay refuses it, and the first run's output differs (its `code_run`
    # comes before the call's `network` events).
    (workspace / "lily.yaml").write_text(
        f"tools:\n  allow: [shell, python]\nnetwork:\n  deny: [blocked.test, '{allowed}']\n")
    denied = replay_session(log, environ=environ).describe()
    assert "(code_run) differs in output_bytes" in denied, denied


def test_an_untrusted_folders_allow_is_held_and_its_host_asked(
        server: OpenAIServer, files: int, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "lily.yaml").write_text(
        f"network:\n  allow: [localhost, '127.0.0.1:{files}']\n")
    with lily_kernel(workspace, tmp_path / "home", LILY_TRUST="",
                     **_settings(server)) as kernel:
        _shell(server, _fetch(f"http://localhost:{files}/hello.txt") + "; "
               + _fetch(f"http://127.0.0.1:{files}/hello.txt"))
        # The trust question (held: network.allow, named), then the shell call (asked in
        # an untrusted folder), then the host: the file's allow did not apply, and the
        # address it named exactly is refused as any address of this machine.
        run, prompts = execute_answering(kernel, "Go", ["n", "y", "n"])
        assert run.status == "ok", run.reply
        trust, _shell_question, host = prompts
        assert f"network.allow: localhost, 127.0.0.1:{files}" in trust
        assert "workspace data" in trust
        assert 'wants to connect to "localhost"' in host
        read = _result(server)
        assert f"{BLOCKED}: localhost (the person declined it for this run)" in read
        assert f"{BLOCKED}: 127.0.0.1 (a loopback address: refused unless network.allow " \
            "names it exactly, with its port)" in read
        assert "hello-lily" not in read
