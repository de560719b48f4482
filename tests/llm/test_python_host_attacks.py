"""Attacks on the host's side of the session's Python (hardening round four, #34): what Lily
reads, connects to, holds in memory and leaves behind for a kernel whose code is
hostile. A real IPython subkernel in real bubblewrap, through the real gate (the model's
`python` call) or in a real Lily kernel (`/python`, the model over loopback HTTP)."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from lily_kernel.execution.sandbox import find_sandbox
from tests.kernel.conftest import LilyProcess, lily_kernel
from tests.support.openai_server import OpenAIServer, Reply, tool_call
from tests.support.shell_gate import ShellCall, run_python
from tests.support.waiting import wait_until

MARKER = "MARKER-host-notes-0123456789"
GROWTH_MB = 400  # what an endless output may add to the Lily kernel's memory, at most

pytestmark = pytest.mark.skipif(
    not find_sandbox(os.environ).available and os.environ.get("CI") != "true",
    reason=f"no working bubblewrap here ({find_sandbox(os.environ).reason})")


def _everything(done: ShellCall) -> str:
    """All the run left for the model, the cell and the event log."""
    return "\n".join([done.output, *done.notices, *(json.dumps(e.data) for e in done.events)])


def test_links_in_place_of_the_kernels_files_read_and_reach_nothing_of_the_host(
        tmp_path: Path, workspace: Path, environ: dict[str, str]) -> None:
    """The kernel replaces every file of its own Lily can see (the log of what it printed,
    its sockets, its connection file) by a link to a file or a Unix socket only the host
    has, then exits: Lily reads no such file and connects to no such socket (it used to
    read the log's last line through the link, and to reconnect to the sockets by name)."""
    notes = tmp_path / "notes.txt"  # the person's: outside the sandbox's sight
    notes.write_text(f"first line\n{MARKER}\n")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(tmp_path / "host.sock"))
    listener.listen(20)
    listener.setblocking(False)
    code = (
        "import glob, os\n"
        f"host_socket, notes = {str(tmp_path / 'host.sock')!r}, {str(notes)!r}\n"
        "def swap(path, target):\n"
        "    for step in (os.unlink, lambda p: os.symlink(target, p)):\n"
        "        try:\n"
        "            step(path)\n"
        "        except OSError:\n"
        "            pass\n"
        "for entry in glob.glob('/tmp/lily-*'):\n"
        "    if os.path.isdir(entry) and not os.path.islink(entry):\n"
        "        for name in ['kernel.log', *os.listdir(entry)]:\n"
        "            swap(os.path.join(entry, name),\n"
        "                 host_socket if name.startswith('kernel-') else notes)\n"
        "    else:\n"
        "        swap(entry, host_socket)\n"
        "os._exit(1)\n")
    done = run_python(code, workspace, environ, timeout=60)
    assert done.status == "failed" and "ended while it ran the code" in done.output
    assert MARKER not in _everything(done)
    with pytest.raises(BlockingIOError):
        listener.accept()


def test_a_folders_modules_never_run_in_place_of_the_kernels(
        workspace: Path, environ: dict[str, str]) -> None:
    """A folder's `ipykernel_launcher.py` (it ran as the kernel started), its
    `stack_data.py` (it ran at the first traceback, shadowing the installed one): none
    runs; the folder's own module still imports, as in a notebook."""
    for name in ("ipykernel_launcher", "stack_data", "executing"):
        (workspace / f"{name}.py").write_text(
            f"open('RAN-{name}', 'w').write('the folder ran its code')\n")
    (workspace / "helpers.py").write_text("ANSWER = 6 * 7\n")
    done = run_python("import helpers\nprint('kernel', helpers.ANSWER)\n1 / 0", workspace,
                      environ, timeout=60)
    assert "kernel 42" in done.output and "ZeroDivisionError" in done.output, done.output
    assert sorted(p.name for p in workspace.glob("RAN-*")) == []


def _env(server: OpenAIServer, **extra: str) -> dict[str, str]:
    return {"LILY_MODEL": "openai/host-attacks", "LILY_API_BASE": server.base_url,
            "OPENAI_API_KEY": "sk-host-attacks-0123456789", "LILY_RETRY_BACKOFF": "0.01",
            "LILY_TOOLS_ALLOW": "python", **extra}


def test_a_killed_lily_leaves_no_folder_of_its_python_kernel(
        server: OpenAIServer, tmp_path: Path) -> None:
    temporary = tmp_path / "tmp"  # the Lily kernel's own temporary folder (TMPDIR)
    temporary.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with lily_kernel(workspace, tmp_path / "home", **_env(server, TMPDIR=str(temporary))) \
            as kernel:
        assert kernel.execute("/python import os", timeout=60).status == "ok"
        os.kill(kernel.km.provisioner.pid, signal.SIGKILL)  # type: ignore[union-attr]
        wait_until(lambda: not kernel.km.is_alive(), "the Lily kernel died")
    wait_until(lambda: not [p for p in temporary.iterdir() if p.name.startswith("lily-")],
               f"no lily- folder left in {temporary}", timeout=30)


ENDLESS = {
    "long lines": "while True: print('x' * 1000)",
    "short lines": "while True: print('x')",
    "huge displays": "from IPython.display import display\n"
                     "while True: display({'text/plain': 'y' * 10_000_000}, raw=True)",
}


@pytest.fixture(scope="module")
def chatty(server: OpenAIServer, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[LilyProcess]:
    root = tmp_path_factory.mktemp("endless")
    (root / "ws").mkdir()
    with lily_kernel(root / "ws", root / "home", **_env(server, LILY_PYTHON_TIMEOUT="15")) \
            as kernel:
        assert kernel.execute("/python kept = 'still here'", timeout=60).status == "ok"
        yield kernel


@pytest.mark.parametrize("code", ENDLESS.values(), ids=ENDLESS.keys())
def test_an_endless_output_is_stopped_and_the_lily_kernel_stays_small(
        chatty: LilyProcess, code: str) -> None:
    """The Lily kernel's memory (psutil's RSS of its process, sampled every 20 ms) grows
    by less than GROWTH_MB while its Python prints or displays without end."""
    lily = psutil.Process(chatty.km.provisioner.pid)  # type: ignore[union-attr]
    before = lily.memory_info().rss
    peak, stop = [before], threading.Event()

    def watch() -> None:
        while not stop.wait(0.02):
            peak[0] = max(peak[0], lily.memory_info().rss)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        run = chatty.execute(f"/python {code}", timeout=120)
    finally:
        stop.set()
        watcher.join()
    grown_mb = (peak[0] - before) / 2**20
    print(f"the Lily kernel grew by {grown_mb:.0f} MiB")  # (pytest -s shows the figure)
    assert grown_mb < GROWTH_MB
    assert run.status == "error"
    said = run.reply["evalue"]
    assert said.startswith("Error: /python: stopped: ") and "variables are kept" in said
    if "display" not in code:
        assert "x\n" in "".join(c["text"] for c in run.of_type("stream"))
    after = chatty.execute("/python print(kept)", timeout=60)
    assert after.status == "ok" and "still here" in str(after.outputs), after.reply


def test_code_that_ignores_the_interrupt_is_said_to_have_lost_its_variables(
        server: OpenAIServer, tmp_path: Path) -> None:
    """Past the time limit the kernel is interrupted; code that ignores it is ended with
    its kernel: the model's text and the cell say its variables are gone (they used to
    say they were kept)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    stubborn = ("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                "while True:\n    pass")
    server.replies.clear()
    server.script(Reply(tool_calls=[tool_call("python", {"code": stubborn})]),
                  Reply(text="It would not stop."))
    with lily_kernel(workspace, tmp_path / "home", **_env(server, LILY_PYTHON_TIMEOUT="2")) \
            as kernel:
        assert kernel.execute("/python kept = 1", timeout=60).status == "ok"
        run = kernel.execute("Spin", timeout=120)
        assert run.status == "ok", run.reply
        result = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
        gone = "the kernel was ended, its variables are gone"
        assert result[-1].startswith("[stopped: it ran longer than the time limit (2 s)")
        assert gone in result[-1] and "kept" not in result[-1]
        assert any(gone in str(m["content"]) for m in run.outputs)  # the cell's notice
        fresh = kernel.execute("/python print('kept' in dir())", timeout=60)
        assert "False" in str(fresh.outputs), fresh.reply  # a new kernel: nothing kept
        cell = kernel.execute(f"/python {stubborn}", timeout=120)
        assert gone in cell.reply["evalue"] and "kept" not in cell.reply["evalue"]


@pytest.mark.slow  # the runtime's Python kernel, started twice
def test_what_appears_after_the_kernel_started_is_protected_at_the_next_run(
        workspace: Path, environ: dict[str, str]) -> None:
    """A kernel lives for the session, and its sandbox was laid when it started: a `.env`
    the person saves later, or a repository they make, was open to it (a mount holds an
    entry, not a name). At its next run the kernel is started again under a sandbox
    that protects them, and the run says so; a dot-entry it makes at the top is set
    aside after the run."""
    import asyncio

    from lily_kernel.execution.limits import Limits, RunSettings
    from lily_kernel.execution.python_host import PythonHost
    from lily_kernel.execution.runner import ScriptHost

    settings = RunSettings(60, limits=Limits())
    scripts = ScriptHost(environ, settings)
    host = PythonHost(environ, workspace, (), scripts.sandbox, settings=settings)
    printed: list[str] = []

    def collect(output: dict[str, object]) -> None:
        printed.append(str(output.get("text", "")))

    async def session() -> list[str]:
        try:
            first = await host.run("kept = 42\nprint('first run')", collect)
            assert first.status == "ok", first
            # The person, on the host, while the kernel lives:
            (workspace / ".env").write_text(f"TOKEN={MARKER}\n")
            (workspace / ".git" / "hooks").mkdir(parents=True, exist_ok=True)
            second = await host.run(
                "import os\n"
                "try:\n    print('read', open('.env').read())\nexcept OSError as e:\n"
                "    print('refused', type(e).__name__)\n"
                "try:\n"
                "    open('.git/hooks/pre-commit', 'w').write('echo pwned')\n"
                "    print('hook written')\nexcept OSError as e:\n"
                "    print('hook refused', type(e).__name__)\n"
                "print('kept' in globals())\n"
                "open('.envrc', 'w').write('echo pwned')\n", collect)
            assert second.status == "ok", second
            return printed
        finally:
            host.close()

    text = "".join(asyncio.run(session()))
    assert MARKER not in text and "hook written" not in text, text
    assert "the Python kernel was started again: " in text and ".env" in text
    assert "False\n" in text  # a new kernel: its variables are gone, as it said
    assert "[removed after the run: .envrc" in text
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert not (workspace / ".envrc").exists()
    assert [p.name for p in (workspace / ".lily" / "removed").glob("*/*")] == [".envrc"]
    assert (workspace / ".env").read_text() == f"TOKEN={MARKER}\n"  # the person's, kept
