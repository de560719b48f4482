"""Lily behind Jupyter Kernel Gateway: REST to start, interrupt and delete a kernel, the
websocket to run cells, as a JupyterHub- or gateway-style deployment reaches kernels.

Nothing is configured, so the chat cell is answered by the embedded model; a user skill
under the gateway's LILY_HOME shows that the gateway's environment reaches the kernel.
"""

from __future__ import annotations

import os
import urllib.error
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from lily_kernel.llm.local_files import find_embedded_model
from tests.conftest import write_skill
from tests.support.jupyter_server import JupyterProcess, start_gateway
from tests.support.kernel_ws import KernelSocket, WsExecution

DEADLINE = 180.0  # seconds for one step on a loaded machine (a kernel start, an answer)
EMBEDDED = "SmolLM2-135M-Instruct (local)"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProcess]:
    if find_embedded_model() is None:
        reason = "the embedded model (the `local` extra) is not installed: ./setup.sh does it"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the gateway test, but: {reason}")
        pytest.skip(reason)
    base = tmp_path_factory.mktemp("gateway")
    root, home = base / "root", base / "home"
    write_skill(root / "skills", "echo",
                "---\nsummary: Echo from the gateway's workspace.\n---\n\nSay it back.\n")
    write_skill(home / ".lily" / "skills", "from_home",
                "---\nsummary: A user skill under the gateway's LILY_HOME.\n---\n\nBody.\n")
    server = start_gateway(root, home, base / "gateway.log")
    try:
        yield server
    finally:
        server.stop()


def lily_kernels(gateway: JupyterProcess) -> list[psutil.Process]:
    """The gateway's child processes that are Lily kernels."""
    children = psutil.Process(gateway.process.pid).children(recursive=True)
    return [p for p in children if "lily_kernel" in " ".join(p.cmdline())]


def answer_text(run: WsExecution) -> str:
    """The answer so far: the last display (update) of a reply, as plain text."""
    shown = [c["data"]["text/plain"] for m in run.outputs
             if m["msg_type"] in ("display_data", "update_display_data")
             for c in [m["content"]] if "lily-reply" in c["data"].get("text/html", "")]
    return shown[-1] if shown else ""


def replied(run: WsExecution) -> bool:
    return run.reply is not None


def ok(run: WsExecution) -> bool:
    return run.reply is not None and run.reply["status"] == "ok"


def test_lily_runs_behind_kernel_gateway(gateway: JupyterProcess, tmp_path: Path) -> None:
    assert gateway.api("GET", "/api/kernelspecs")["default"] == "lily"
    kernel = gateway.api("POST", "/api/kernels", {}, timeout=DEADLINE)  # the default kernel
    assert kernel["name"] == "lily"
    kernel_id = kernel["id"]
    assert len(lily_kernels(gateway)) == 1
    ws_url = gateway.url.replace("http://", "ws://") + f"/api/kernels/{kernel_id}/channels"

    with KernelSocket(ws_url, gateway.token, timeout=DEADLINE) as ks:
        skills = ks.execute("/skills")
        assert ok(skills), skills.reply
        assert "Echo from the gateway's workspace." in skills.plain  # cwd = the workspace
        assert "A user skill under the gateway's LILY_HOME." in skills.plain  # its env
        help_ = ks.execute("/help")
        assert ok(help_) and "/reload_skills" in help_.plain

        chat = ks.execute("In one sentence: what is a notebook?")
        assert ok(chat), chat.reply
        assert EMBEDDED in answer_text(chat)  # the footer under the embedded model's answer
        assert chat.of_type("update_display_data")  # streamed: one display updated

        story = ks.start("Tell me a very long story about a lily.")
        ks.collect_until(story, lambda r: len(answer_text(r)) > 0)  # it is streaming
        assert not replied(story)  # still running when the interrupt goes out
        gateway.api("POST", f"/api/kernels/{kernel_id}/interrupt")
        ks.wait(story)
        assert story.reply is not None and story.reply["status"] == "error"
        assert story.reply["ename"] == "KeyboardInterrupt"
        assert EMBEDDED not in answer_text(story)  # stopped before its footer

        after = ks.execute("/skills")  # the kernel survived the interrupt
        assert ok(after)

    assert gateway.api("DELETE", f"/api/kernels/{kernel_id}") is None
    with pytest.raises(urllib.error.HTTPError) as gone:
        gateway.api("GET", f"/api/kernels/{kernel_id}")
    assert gone.value.code == 404
    psutil.wait_procs(lily_kernels(gateway), timeout=DEADLINE)
    assert lily_kernels(gateway) == []
