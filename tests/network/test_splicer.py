"""The bytes of an allowed connection are copied in the splicer's process: a download
through the proxy finishes while the proxy's own process holds the GIL (as the kernel's
other threads may), and ending the session ends the copies and the process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lily_kernel.network import splicer as splicer_module
from lily_kernel.network.decisions import Verdict
from lily_kernel.network.proxy import SessionProxy
from lily_kernel.network.splicer import Splicer
from tests.network.servers import EchoServer, connect, read_head
from tests.support.waiting import wait_until

MEGABYTES = 20

# A client in a process of its own: the request over the proxy's socket, "started" once
# the answer's first bytes came, then the bytes it read and the monotonic clock at the end.
CLIENT = """
import socket, sys, time
client = socket.socket(socket.AF_UNIX)
client.connect(sys.argv[1])
client.sendall(f"GET http://127.0.0.1:{sys.argv[2]}/big HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n".encode())
total = len(client.recv(65536))
print("started", flush=True)
while chunk := client.recv(1 << 20):
    total += len(chunk)
print(total, time.monotonic(), flush=True)
"""


@contextmanager
def file_process(folder: Path) -> Iterator[int]:
    """`python -m http.server` in a process of its own (it must not need this GIL)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1",
                               str(port)], cwd=folder, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        def listening() -> bool:
            with socket.socket() as client:
                return client.connect_ex(("127.0.0.1", port)) == 0
        wait_until(listening, "the file server", 30)
        yield port
    finally:
        server.kill()
        server.wait()


def hold_the_gil(seconds: float) -> None:
    """Keep this process's GIL for about `seconds`: sum() over a range runs in C and never
    lets another thread in."""
    began = time.perf_counter()
    sum(range(1_000_000))
    per_million = max(time.perf_counter() - began, 1e-4)
    sum(range(int(seconds / per_million * 1_000_000)))


def test_a_download_finishes_while_the_proxys_process_holds_the_gil(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    (served / "big").write_bytes(os.urandom(1024 * 1024) * MEGABYTES)
    folder = tmp_path / "net"
    folder.mkdir()
    proxy = SessionProxy.start(folder, lambda _: Verdict(True, "policy", exact=True),
                               lambda _: None)
    try:
        with file_process(served) as port:
            client = subprocess.Popen([sys.executable, "-c", CLIENT, str(proxy.socket),
                                       str(port)], stdout=subprocess.PIPE, text=True)
            assert client.stdout is not None
            assert client.stdout.readline().strip() == "started"
            hold_the_gil(3.0)
            held_until = time.monotonic()
            total, ended = client.stdout.readline().split()
            client.wait(30)
    finally:
        proxy.stop()
    assert int(total) > MEGABYTES * 1024 * 1024  # the head and the whole file
    assert float(ended) < held_until  # copied while no thread here could run


def test_the_sessions_end_ends_the_splicers_process(tmp_path: Path) -> None:
    splicer = Splicer()
    upstream, far = socket.socketpair()
    client, near = socket.socketpair()
    with upstream, far, client, near:
        far.sendall(b"answer")
        far.shutdown(socket.SHUT_WR)
        assert splicer.copy(upstream, client) == 6
        assert near.recv(100) == b"answer" and near.recv(100) == b""  # half-closed after
        process = splicer._process
        assert process is not None and process.poll() is None
        splicer.close()
        wait_until(lambda: process.poll() is not None, "the splicer's end", 10)
        assert splicer.copy(upstream, client) is None  # closed: the caller copies itself


def test_without_the_splicers_process_the_proxy_copies_itself(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[bool] = []

    def cannot_start() -> tuple[None, None]:
        started.append(False)
        return None, None

    monkeypatch.setattr(splicer_module, "_start", cannot_start)
    echo = EchoServer()
    proxy = SessionProxy.start(tmp_path, lambda _: Verdict(True, "policy", exact=True),
                               lambda _: None)
    try:
        with connect(proxy.socket) as client:
            client.sendall(f"CONNECT 127.0.0.1:{echo.port} HTTP/1.1\r\nHost: x\r\n\r\nping".encode())
            assert read_head(client).startswith(b"HTTP/1.1 200")
            assert client.recv(4) == b"ping"
            client.sendall(b"pong")
            assert client.recv(4) == b"pong"
    finally:
        proxy.stop()
        echo.close()
    assert started == [False]  # tried once, then copied in the proxy's own process
