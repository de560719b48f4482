"""`/mcp` answers promptly (issue 37, item 9): the first `/mcp` with a server that never
answers (it lives 30 s, then exits) used to block the cell for as long as the server
lived; it now answers within its bound, the server listed as starting. A real Lily
kernel over ZeroMQ, a real stdio process."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tests.kernel.conftest import lily_kernel

SILENT = "import time; time.sleep(30)"  # no MCP on stdout, then gone
BOUND = 20.0  # seconds: a failure bound on a loaded machine (the wait itself is 5 s)


def test_the_first_mcp_answers_while_a_silent_server_lives(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "lily.yaml").write_text(
        f"mcp_servers:\n  silent:\n    command: {sys.executable}\n"
        f"    args: [\"-c\", \"{SILENT}\"]\n    timeout: 60\n")
    with lily_kernel(workspace, tmp_path / "home", LILY_MODEL="openai/none") as kernel:
        assert kernel.execute("/help").status == "ok"  # the kernel is up
        started = time.monotonic()
        run = kernel.execute("/mcp")
        took = time.monotonic() - started
        assert run.status == "ok", run.reply
        assert took < BOUND, took
        assert "starting: no answer yet" in run.plain, run.plain
