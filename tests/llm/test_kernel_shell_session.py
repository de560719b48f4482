"""The shell's session sandbox through a real Lily kernel (jupyter_client over ZeroMQ),
the loopback model scripting shell calls, real bubblewrap: tmux's server started by one
call is driven by the next (openclaw's tmux skill), a dev server started in the
background is reached on 127.0.0.1 by the next call, the cell and the model are told
what a command left running; and a daemon a finished command left (double-forked, its
own session) ends with its cell (nothing of the shell runs between cells), and does not
outlive the kernel ended while its cell runs: not its shutdown, its restart, nor a
`kill -9`. (A sandbox replaced before a command: tests/core/test_shell_session.py.)"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.core.test_scripts import sandbox_or_skip
from tests.core.test_shell_session import gone_within, running_with
from tests.kernel.conftest import LilyProcess
from tests.llm.test_kernel_shell import script, start, tool_result
from tests.support.openai_server import OpenAIServer


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    sandbox_or_skip()


def token(name: str) -> str:
    return f"lily-ss-{name}-{os.getpid()}-{time.monotonic_ns()}"


def results(server: OpenAIServer, calls: int) -> list[str]:
    """What the model read of each of the last `calls` shell calls."""
    return [tool_result(server, i) for i in range(-calls, 0)]


def run(kernel: LilyProcess, server: OpenAIServer, *commands: str) -> tuple[str, list[str]]:
    """One cell whose model makes these shell calls: the cell's notices, the results."""
    script(server, *commands)
    cell = kernel.execute("Go", allow_stdin=True)  # LILY_TOOLS_ALLOW: never asked
    assert cell.status == "ok", cell.reply
    return cell.plain, results(server, len(commands))


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_tmux_started_by_one_call_is_driven_by_the_next_and_ends_with_the_cell(
        server: OpenAIServer, tmp_path: Path) -> None:
    mark = token("tmux")
    tmux = f"tmux -L {mark}"
    with start(server, tmp_path, LILY_TOOLS_ALLOW="shell") as kernel:
        # One cell, three calls: tmux's server started by the first is there for the
        # next (not `error connecting to /tmp/tmux-0/...`) and runs what it is sent.
        cell, [started, sent, shown] = run(
            kernel, server, f"{tmux} new-session -d -s shared",
            f"{tmux} send-keys -t shared 'echo from-tmux > tmux.txt' Enter",
            "while [ ! -s tmux.txt ]; do sleep 0.05; done; cat tmux.txt; "
            f"{tmux} list-sessions -F '#{{session_name}}'")
        assert f'[left running in the session\'s shell sandbox: "{tmux} new-session -d -s ' \
               'shared" (pid ' in started
        assert "it ends when this turn ends (the person's cell)" in started
        assert sent.startswith("[exit code 0]"), sent
        assert shown.startswith("[exit code 0]\nfrom-tmux\nshared\n"), shown
        assert f"Left running in the shell's sandbox: \"{tmux} new-session" in cell
        # The cell's turn ended, and tmux's server with it: the cell says so, and
        # nothing of it runs between cells.
        assert f'Ended with this cell: "{tmux} new-session -d -s shared" (pid ' in cell
        assert gone_within(mark, 5) == []
        cell, [after] = run(kernel, server, f"{tmux} list-sessions")
        assert after.startswith("[exit code 1]\nerror connecting to /tmp/tmux-"), after
        assert "Ended with this cell" not in cell


def test_a_dev_server_started_in_the_background_is_reached_by_the_next_call(
        server: OpenAIServer, tmp_path: Path) -> None:
    mark = token("http")
    with start(server, tmp_path, LILY_TOOLS_ALLOW="shell") as kernel:
        (kernel.workspace / "page.txt").write_text(mark)
        wait = (f"{sys.executable} -I -c \"import socket, time\n"
                "while socket.socket().connect_ex(('127.0.0.1', 8765)): time.sleep(0.05)\"")
        fetch = (f"NO_PROXY=127.0.0.1 {sys.executable} -I -c \"import urllib.request as u; "
                 "print(u.urlopen('http://127.0.0.1:8765/page.txt').read().decode())\"")
        _, [started, fetched] = run(
            kernel, server,
            f"nohup {sys.executable} -I -m http.server 8765 --bind 127.0.0.1 > http.log "
            f"2>&1 & {wait}", fetch)
        assert "http.server 8765" in started and "left running" in started
        assert fetched.startswith(f"[exit code 0]\n{mark}\n"), fetched


def daemon_command(mark: str) -> str:
    """A daemon as tmux's server is one: double-forked (the subshell's child, in a new
    session), its output closed; the command itself ends at once."""
    return (f"( setsid sh -c 'sleep 300; : {mark}' </dev/null >/dev/null 2>&1 & ); "
            "echo left")


def test_a_daemon_left_by_a_finished_command_ends_with_its_cell(
        server: OpenAIServer, tmp_path: Path) -> None:
    mark = token("cell")
    with start(server, tmp_path, LILY_TOOLS_ALLOW="shell") as kernel:
        cell, [left] = run(kernel, server, daemon_command(mark))
        assert left.startswith("[exit code 0]\nleft\n") and "left running" in left
        assert "Ended with this cell: " in cell, cell
        assert gone_within(mark, 5) == []  # nothing of the shell runs between cells


@pytest.mark.parametrize("end", ["shutdown", "restart", "kill -9"])
def test_a_daemon_left_by_a_finished_command_does_not_outlive_the_kernel(
        server: OpenAIServer, tmp_path: Path, end: str) -> None:
    mark = token("end")
    with start(server, tmp_path, LILY_TOOLS_ALLOW="shell") as kernel:
        # The kernel ends while the cell's turn still runs (its second command waits):
        # the daemon its first command left lives on until then.
        script(server, daemon_command(mark), "sleep 120")
        kernel.kc.execute("Go", allow_stdin=True)
        deadline = time.monotonic() + 120
        # The daemon itself (`sh -c 'sleep 300; : MARK'`), not the command that starts
        # it, whose line holds the same words between quotes.
        daemon = f"\0sleep 300; : {mark}\0"
        while len(running_with(daemon)) != 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(running_with(daemon)) == 1  # it lives on after its command
        pid = kernel.km.provisioner.pid  # type: ignore[union-attr]
        if end == "kill -9":
            os.kill(pid, signal.SIGKILL)
        elif end == "shutdown":
            kernel.km.shutdown_kernel(now=False)
        else:
            kernel.km.restart_kernel(now=False)
        assert gone_within(mark, 5) == [], f"alive 5 s after {end}"
