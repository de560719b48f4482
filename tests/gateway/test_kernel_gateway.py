"""Lily behind Jupyter Kernel Gateway: REST to start, interrupt and delete a kernel, the
websocket to run cells, exactly as JupyterHub-style deployments reach kernels remotely."""

from __future__ import annotations

import urllib.error
from collections.abc import Iterator

import psutil
import pytest

from tests.conftest import write_skill
from tests.support.jupyter_server import JupyterProcess, start_gateway
from tests.support.kernel_ws import KernelSocket, WsExecution
from tests.support.openai_server import OpenAIServer, Reply

DEADLINE = 120.0  # seconds for one step on a loaded machine (a kernel start, a cell)


@pytest.fixture(scope="module")
def model_server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory,
            model_server: OpenAIServer) -> Iterator[JupyterProcess]:
    base = tmp_path_factory.mktemp("gateway")
    root = base / "root"
    write_skill(root / "skills", "echo",
                "---\nsummary: Echo from the gateway's workspace.\n---\n\nSay it back.\n")
    server = start_gateway(root, base / "home", base / "gateway.log",
                           LILY_MODEL="openai/gateway-test", LILY_API_BASE=model_server.base_url,
                           OPENAI_API_KEY="sk-gateway-test")
    try:
        yield server
    finally:
        server.stop()


def lily_kernels(gateway: JupyterProcess) -> list[psutil.Process]:
    """The gateway's child processes that are Lily kernels."""
    children = psutil.Process(gateway.process.pid).children(recursive=True)
    return [p for p in children if "lily_kernel" in " ".join(p.cmdline())]


def streamed_text(run: WsExecution) -> str:
    updates = run.of_type("update_display_data") or run.of_type("display_data")
    return updates[-1]["data"].get("text/markdown", "") if updates else ""


def test_lily_runs_behind_kernel_gateway(gateway: JupyterProcess,
                                         model_server: OpenAIServer) -> None:
    assert gateway.api("GET", "/api/kernelspecs")["default"] == "lily"
    kernel = gateway.api("POST", "/api/kernels", {}, timeout=DEADLINE)  # the default kernel
    assert kernel["name"] == "lily"
    kernel_id = kernel["id"]
    assert len(lily_kernels(gateway)) == 1
    ws_url = gateway.url.replace("http://", "ws://") + f"/api/kernels/{kernel_id}/channels"

    with KernelSocket(ws_url, gateway.token, timeout=DEADLINE) as ks:
        skills = ks.execute("/skills")
        assert skills.reply is not None and skills.reply["status"] == "ok", skills.reply
        assert "Echo from the gateway's workspace." in skills.plain  # kernel cwd = workspace
        help_ = ks.execute("/help")
        assert help_.reply is not None and help_.reply["status"] == "ok"
        assert "/reload_skills" in help_.plain

        model_server.script(Reply(text="Once upon a time. " * 80, pieces=80, chunk_delay=0.25))
        chat = ks.start("Tell me a very long story.")
        ks.collect_until(chat, lambda r: len(streamed_text(r)) > 0, DEADLINE)  # streaming
        gateway.api("POST", f"/api/kernels/{kernel_id}/interrupt")
        ks.wait(chat)
        assert chat.reply is not None and chat.reply["status"] == "error"
        assert chat.reply["ename"] == "KeyboardInterrupt"
        assert len(streamed_text(chat)) < len("Once upon a time. " * 80)

        after = ks.execute("/skills")  # the kernel survived the interrupt
        assert after.reply is not None and after.reply["status"] == "ok"

    assert gateway.api("DELETE", f"/api/kernels/{kernel_id}") is None
    with pytest.raises(urllib.error.HTTPError) as gone:
        gateway.api("GET", f"/api/kernels/{kernel_id}")
    assert gone.value.code == 404
    psutil.wait_procs(lily_kernels(gateway), timeout=DEADLINE)
    assert lily_kernels(gateway) == []
