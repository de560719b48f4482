"""Real loopback servers and a raw client for the proxy's tests: a file server (GET a file,
POST echoed back), a TCP echo server that records who connected, and one request sent
over the proxy's Unix socket as a client inside the sandbox would send it."""

from __future__ import annotations

import functools
import http.server
import socket
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class _Files(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while (size := int(self.rfile.readline().strip(), 16)) > 0:
                body += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def file_server(folder: Path, host: str = "127.0.0.1") -> Iterator[int]:
    """An HTTP server on `host` serving `folder`; its port."""
    server = http.server.ThreadingHTTPServer(
        (host, 0), functools.partial(_Files, directory=str(folder)))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


class EchoServer(socketserver.ThreadingTCPServer):
    """Echoes every byte back; `peers` counts the connections it accepted."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.peers: list[str] = []
        self.received = b""

        outer = self

        class Echo(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                outer.peers.append(self.client_address[0])
                while data := self.request.recv(65536):
                    outer.received += data
                    self.request.sendall(data)

        super().__init__((host, port), Echo)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.shutdown()
        self.server_close()


def connect(path: Path, timeout: float = 10) -> socket.socket:
    """A client connection to the proxy's Unix socket."""
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(timeout)
    client.connect(str(path))
    return client


def read_all(client: socket.socket) -> bytes:
    data = b""
    while chunk := client.recv(65536):
        data += chunk
    return data


def read_head(client: socket.socket) -> bytes:
    """Up to the end of a response's head (for a tunnel: what follows stays unread)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = client.recv(1)
        if not chunk:
            break
        data += chunk
    return data


def exchange(path: Path, request: bytes, timeout: float = 10) -> bytes:
    """Send `request` whole and read the answer to its end."""
    with connect(path, timeout) as client:
        client.sendall(request)
        return read_all(client)
