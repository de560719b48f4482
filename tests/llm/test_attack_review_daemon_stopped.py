"""Security review of the shell's session sandbox (issue 36), what holds: a daemon a
finished command left, meant to connect between cells, is ended with its cell (the
shell's sandbox lives for one turn): nothing connects, no one is asked; through a real
Lily kernel (jupyter_client over ZeroMQ), the loopback model scripting the shell call,
real bubblewrap."""

from __future__ import annotations

import queue
import sys
from pathlib import Path

import pytest

from tests.core.test_scripts import sandbox_or_skip
from tests.llm.test_attack_review_skill_write import _appeared
from tests.llm.test_kernel_shell import script, start, tool_result
from tests.support.openai_server import OpenAIServer

ATTACK = """\
import os, time, urllib.request
while not os.path.exists('go'):
    time.sleep(0.05)
try:
    said = str(urllib.request.urlopen('http://review-evil.example/', timeout=120).status)
except Exception as exc:
    said = repr(exc)
open('net.txt', 'w').write(said)
open('net-done', 'w').close()
"""


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    sandbox_or_skip()


def test_a_daemon_meant_to_connect_between_cells_is_ended_and_asks_no_one(
        server: OpenAIServer, tmp_path: Path) -> None:
    with start(server, tmp_path, LILY_TOOLS_ALLOW="shell") as kernel:
        workspace = kernel.workspace
        (workspace / "attack.py").write_text(ATTACK)  # (came with the downloaded folder)
        script(server, f"( setsid {sys.executable} -I attack.py </dev/null >/dev/null 2>&1 "
               "& ); echo left")
        cell = kernel.execute("Go", allow_stdin=True)
        assert cell.status == "ok", cell.reply
        assert "left running" in tool_result(server)
        assert "Ended with this cell: " in cell.plain, cell.plain
        (workspace / "go").touch()
        # Ended with its cell (docs/execution.md, "The session's sandbox"): nothing of it
        # connects between cells, nobody is asked, the proxy saw no such host.
        assert not _appeared(workspace / "net-done", 3), "a daemon ran between cells"
        with pytest.raises(queue.Empty):
            kernel.kc.get_stdin_msg(timeout=0.5)
        assert "review-evil.example" not in kernel.execute("/network").plain
