"""The kernel's start path stays light: no litellm, no openai, no debugpy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.kernel.conftest import kernel_env

START = """
import json, sys
from lily_kernel.kernel.kernel import LilyKernel
kernel = LilyKernel()
kernel._starting.result(timeout=60)
info = kernel.kernel_info
print(json.dumps({
    "started": kernel.runtime is not None,
    "features": info["supported_features"],
    "heavy": sorted({m.split(".")[0] for m in sys.modules} & {"litellm", "openai", "debugpy"}),
}))
"""


def test_starting_a_session_and_answering_kernel_info_imports_nothing_heavy(
    tmp_path: Path,
) -> None:
    env = kernel_env(tmp_path / "home", LILY_WORKSPACE=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", START], env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"started": True, "features": [], "heavy": []}


def test_a_client_that_never_asks_for_kernel_info_still_gets_a_session(tmp_path: Path) -> None:
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="lily")
    km.start_kernel(cwd=str(tmp_path), env=kernel_env(tmp_path / "home"))
    kc = km.client()
    kc.start_channels()
    try:
        msg_id = kc.execute("/skills")  # no kernel_info request first
        reply = kc.get_shell_msg(timeout=60)
        assert reply["parent_header"]["msg_id"] == msg_id
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _kernel_stderr(tmp_path: Path, ip: str) -> str:
    """Start a kernel listening on `ip` over TCP, run a cell, stop it: its stderr."""
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="lily", ip=ip, transport="tcp")
    log = tmp_path / f"stderr-{ip}.txt"
    with log.open("w") as stderr:
        km.start_kernel(cwd=str(tmp_path), env=kernel_env(tmp_path / "home"), stderr=stderr)
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=60)
            msg_id = kc.execute("/help")
            reply = kc.get_shell_msg(timeout=60)
            assert reply["parent_header"]["msg_id"] == msg_id
            assert reply["content"]["status"] == "ok"
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    return log.read_text()


def test_no_encryption_warning_on_loopback_but_kept_on_other_addresses(tmp_path: Path) -> None:
    assert "without encryption" not in _kernel_stderr(tmp_path, "127.0.0.1")
    assert "Kernel is running over TCP without encryption" in _kernel_stderr(tmp_path, "0.0.0.0")


def test_loopback_addresses() -> None:
    from lily_kernel.kernel.app import is_loopback

    assert all(map(is_loopback, ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "*", "::", "192.168.1.4", "10.0.0.1", ""]))
