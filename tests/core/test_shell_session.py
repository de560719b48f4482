"""The shell's session sandbox through real bubblewrap (execution/shell_session.py): what
a command leaves running in the background lives for the next command (the same /tmp,
processes and 127.0.0.1), what still holds its output is ended, the time limit ends
what the command started and nothing from before; the sandbox is replaced when the
workspace outgrows it or its settings change, and nothing of it outlives `close`. An
attacker's daemon gets no more than a command: not a `.env` that appears later, not past
the memory limit, not around the proxy's policy."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lily_kernel.execution.limits import Limits
from lily_kernel.execution.plan import plan_process
from lily_kernel.execution.sandbox import Sandbox
from lily_kernel.execution.shell_session import SessionOutcome, SessionSpec, ShellSessions
from lily_kernel.execution.way_out import WayOut
from lily_kernel.network.proxy import BRIDGE, SessionProxy, refuse_everything
from tests.core.test_scripts import sandbox_or_skip
from tests.network.servers import file_server

# A daemon as tmux's server or a dev server is one: it double-forks into a session of
# its own, closes its output, listens on a Unix socket in /tmp, and tells the command
# it is ready before the command ends. Each connection runs its action (Python, the
# `result` it sets is sent back).
DAEMON = """\
import os, socket, sys
token = sys.argv[1]
with open("action.py") as source:
    action = source.read()
ready_read, ready_write = os.pipe()
if os.fork():
    os.close(ready_write)
    os.read(ready_read, 1)
    os._exit(0)
os.close(ready_read)
os.setsid()
if os.fork():
    os._exit(0)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
server = socket.socket(socket.AF_UNIX)
server.bind("/tmp/daemon.sock")
server.listen()
os.write(ready_write, b"1")
os.close(ready_write)
while True:
    conn, _ = server.accept()
    scope = {}
    try:
        exec(action, scope)
        reply = str(scope.get("result"))
    except BaseException as exc:
        reply = f"{type(exc).__name__}: {exc}"
    conn.sendall(f"{token} {os.getpid()} {reply}".encode())
    conn.close()
"""
ASK = ("import socket; s = socket.socket(socket.AF_UNIX); s.connect('/tmp/daemon.sock'); "
       "print(s.recv(65536).decode())")


@dataclass
class Shell:
    """A session's shell sandbox in `workspace`, its commands run one per event loop
    (as separate turns may be)."""

    sandbox: Sandbox
    workspace: Path
    env: dict[str, str]
    limits: Limits = field(default_factory=Limits)
    allowed: tuple[str, ...] = ()  # lily.yaml's script_env
    sessions: ShellSessions = field(default_factory=ShellSessions)

    def run(self, command: str, timeout: float = 60) -> SessionOutcome:
        return asyncio.run(self.running(command, timeout))

    def running(self, command: str, timeout: float = 60) -> Coroutine[Any, Any, SessionOutcome]:
        plan = plan_process(["/bin/sh", "-c", command], self.workspace, [], self.env,
                            self.sandbox, limits=self.limits, allowed_env=self.allowed)
        assert self.sandbox.bwrap is not None
        spec = SessionSpec.of(self.sandbox.bwrap, plan, self.sandbox.way_out, [], [])
        return self.sessions.run(plan, spec, ["/bin/sh", "-c", command], timeout,
                                 lambda name, text: None)

    def daemon(self, token: str, action: str = "result = 'pong'") -> SessionOutcome:
        (self.workspace / "daemon.py").write_text(DAEMON)
        (self.workspace / "action.py").write_text(action)
        return self.run(f"{sys.executable} -I daemon.py {token}")

    def ask(self) -> str:
        return self.run(f'{sys.executable} -I -c "{ASK}"').result.output


def running_with(token: str) -> list[int]:
    """Live processes whose command line holds `token` (seen from outside any sandbox)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if (entry.name.isdigit() and token.encode() in (entry / "cmdline").read_bytes()
                    and (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def gone_within(token: str, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := running_with(token)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[Shell]:
    found = sandbox_or_skip()
    workspace, home = tmp_path / "workspace", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home)}
    made = Shell(found, workspace, env)
    yield made
    made.sessions.close()


def token(name: str) -> str:
    return f"lily-session-{name}-{os.getpid()}-{time.monotonic_ns()}"


def test_a_daemon_lives_for_the_next_command_and_not_past_close(shell: Shell) -> None:
    mark = token("daemon")
    started = shell.daemon(mark)
    assert started.result.exit_code == 0
    [(pid, name)] = started.left.processes
    assert mark in name and started.left.count == 1
    assert len(running_with(mark)) == 1
    # The next command: the same /tmp (the socket), the same processes (the daemon).
    answer = shell.ask()
    assert answer.startswith(f"{mark} {pid} pong"), answer
    assert shell.run("true").left.count == 0  # (it left nothing itself)
    shell.sessions.close()
    assert gone_within(mark, 5) == []


def test_the_turns_end_ends_what_ran_and_sets_aside_what_it_made(shell: Shell) -> None:
    """A daemon that writes `.envrc` (direnv runs it on the host) and `lily.yaml` after
    the command that started it ended: the turn's end ends it and sets them aside."""
    mark = token("late")
    # The mark first: a name is cut at 200 characters, and the daemon may still carry
    # the outer command's line (forked, not yet exec'd) when the command ends.
    body = (f": {mark}; while [ ! -e go ]; do sleep 0.05; done; echo evil > .envrc; "
            'echo "policy: auto" > lily.yaml; touch wrote; sleep 300; '
            f": {mark}")  # (and last: the shell stays, not exec'd into its sleep)
    started = shell.run(f"( setsid sh -c '{body}' </dev/null >/dev/null 2>&1 & ); echo left")
    # One process left at the top (the daemon's sh); the count may include its
    # `sleep 0.05` of the moment.
    assert started.result.output == "left\n" and started.left.count >= 1
    assert [mark in name for _, name in started.left.processes] == [True]
    (shell.workspace / "go").touch()
    deadline = time.monotonic() + 60
    while not (shell.workspace / "wrote").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (shell.workspace / ".envrc").exists()  # made with no command running
    assert (shell.workspace / "lily.yaml").read_text() == "policy: auto\n"
    processes, count = shell.sessions.end_turn()
    assert count >= 1 and [mark in name for _, name in processes] == [True], processes
    assert gone_within(mark, 5) == []
    assert not (shell.workspace / ".envrc").exists()
    assert not (shell.workspace / "lily.yaml").exists()
    assert shell.sessions.end_turn() == ((), 0)  # (nothing left to end)


def test_the_stop_pressed_as_the_command_starts_stops_it(shell: Shell) -> None:
    """The stop button in the moment the sandbox says the command started: Python
    3.11's `wait_for` lost that cancellation, and the command ran its whole length."""
    mark = token("meets")
    assert shell.run("true").result.exit_code == 0  # (the sandbox, laid)
    sandbox = shell.sessions.sandbox
    assert sandbox is not None

    async def stop_as_it_starts() -> None:
        sandbox._attach()  # this loop's answers: the stop pressed as "started" comes
        answers = sandbox._answers
        put = answers.put_nowait

        def put_and_stop(message: dict[str, Any]) -> None:
            put(message)
            if "started" in message:
                run.cancel()

        answers.put_nowait = put_and_stop  # type: ignore[method-assign,assignment]
        run = asyncio.ensure_future(shell.running(f"sh -c 'sleep 60; : {mark}'"))
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(stop_as_it_starts())
    assert gone_within(mark, 5) == []
    assert shell.run("echo next").result.output == "next\n"  # the sandbox still serves


def test_a_server_started_in_the_background_is_reached_on_loopback(shell: Shell) -> None:
    mark = token("http")
    (shell.workspace / "page.txt").write_text(mark)
    wait = (f"{sys.executable} -I -c \"import socket, time\n"
            "while socket.socket().connect_ex(('127.0.0.1', 8765)): time.sleep(0.05)\"")
    started = shell.run(f"{sys.executable} -I -m http.server 8765 --bind 127.0.0.1 "
                        f"> /tmp/http.log 2>&1 & {wait}")
    assert started.result.exit_code == 0 and "http.server 8765" in started.left.processes[0][1]
    fetched = shell.run(f"{sys.executable} -I -c \"import urllib.request as u; print(u.urlopen("
                        "'http://127.0.0.1:8765/page.txt').read().decode())\"")
    assert fetched.result.output.strip() == mark


def test_what_holds_the_output_is_ended_and_what_detached_lives(shell: Shell) -> None:
    holder, detached = token("holder"), token("detached")
    done = shell.run(f"sh -c 'sleep 300; : {holder}' & "
                     f"setsid sh -c 'sleep 300; : {detached}' >/dev/null 2>&1 </dev/null & "
                     "echo done")
    assert done.result.output == "done\n"
    assert running_with(holder) == [] and len(running_with(detached)) == 1
    assert [detached in name for _, name in done.left.processes] == [True]
    assert done.left.count in (1, 2)  # its sh, and its sleep once sh has started it


def test_the_time_limit_ends_what_the_command_started_and_nothing_before(shell: Shell) -> None:
    before, during = token("before"), token("during")
    shell.run(f"setsid sh -c 'sleep 300; : {before}' >/dev/null 2>&1 </dev/null &")
    stopped = shell.run(f"setsid sh -c 'sleep 300; : {during}' >/dev/null 2>&1 </dev/null & "
                        "sleep 300", timeout=2)
    assert stopped.result.timed_out and stopped.left.count == 0
    assert running_with(during) == [] and len(running_with(before)) == 1


def test_a_workspace_outgrowing_the_sandbox_replaces_it(shell: Shell) -> None:
    """The attacker's daemon waits for a `.env` to read: once one appears, the next
    command starts in a new sandbox (the `.env` hidden), the daemon ended, and it says so."""
    mark = token("outgrown")
    shell.daemon(mark, "result = open('.env').read()")
    (shell.workspace / ".env").write_text("API_KEY=sk-session-SECRET\n")
    replaced = shell.run(f'cat .env; {sys.executable} -I -c "{ASK}"')
    assert replaced.replaced is not None and replaced.replaced.why == ("outgrown",)
    assert replaced.replaced.changed == (".env",)
    assert [mark in name for _, name in replaced.replaced.ended.processes] == [True]
    assert "SECRET" not in replaced.result.output and mark not in replaced.result.output
    assert "No such file" in replaced.result.output  # the new /tmp has no daemon's socket
    assert gone_within(mark, 5) == []


def test_other_settings_replace_the_sandbox(shell: Shell) -> None:
    mark = token("settings")
    shell.env["LILY_SESSION_PASSED"] = "now"
    shell.daemon(mark)
    shell.allowed = ("LILY_SESSION_PASSED",)  # lily.yaml's script_env names it now
    changed = shell.run("echo $LILY_SESSION_PASSED")
    assert changed.replaced is not None and changed.replaced.why == ("environment",)
    assert changed.result.output == "now\n" and gone_within(mark, 5) == []
    shell.limits = Limits(memory_mb=512)
    assert shell.run("true").replaced is not None  # (nothing ran there: nothing to say)


def test_a_daemon_stays_under_the_memory_limit(shell: Shell) -> None:
    shell.limits = Limits(memory_mb=256)
    shell.daemon(token("memory"), "b = bytearray(600 << 20); result = 'allocated'")
    assert "MemoryError" in shell.ask()


def test_a_daemons_network_goes_through_the_proxy_and_its_policy(shell: Shell,
                                                                 tmp_path: Path) -> None:
    folder = tmp_path / "net"
    folder.mkdir()
    proxy = SessionProxy.start(folder, refuse_everything, lambda finished: None)
    try:
        shell.sandbox = Sandbox(shell.sandbox.bwrap, "", WayOut(proxy.socket, BRIDGE))
        served = tmp_path / "served"
        served.mkdir()
        with file_server(served) as port:
            action = (
                "import socket, urllib.request as u\n"
                "try:\n u.urlopen('http://example.com/', timeout=20)\n"
                "except Exception as e:\n proxied = e.read().decode() if hasattr(e, 'read') "
                "else str(e)\n"
                f"direct = socket.socket().connect_ex(('127.0.0.1', {port}))\n"
                "result = f'{proxied} | direct {direct}'")
            started = shell.daemon(token("network"), action)
            assert started.result.exit_code == 0, started.result.output
            answer = shell.ask()
    finally:
        shell.sessions.close()
        proxy.stop()
    assert "blocked by Lily's network policy: example.com" in answer
    assert "direct 111" in answer  # ECONNREFUSED: the sandbox's own loopback, not the host's


def test_a_sandbox_whose_host_was_killed_is_replaced_and_says_what_ended(shell: Shell) -> None:
    """A command may kill the sandbox's own first processes (they are in its PID
    namespace): the sandbox ends, the next command gets a new one and is told."""
    mark = token("killed")
    shell.daemon(mark)
    # Its parent: the sandbox's host (after a second: the host says a command started
    # once it started it, and a host killed before that was heard is "not started").
    killed = shell.run("sleep 1; kill -KILL $PPID; sleep 5")
    assert killed.result.exit_code == 137 and gone_within(mark, 5) == []
    after = shell.run("echo new")
    assert after.result.output == "new\n" and after.replaced is not None
    assert after.replaced.why == ("ended",)
    assert [mark in name for _, name in after.replaced.ended.processes] == [True]
