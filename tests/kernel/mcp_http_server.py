"""`lily mcp --http` as a real process on a free loopback port, for the tests of its HTTP
edge (test_mcp_http.py) and of the conformance suite (test_mcp_conformance.py).

The port is the server's own choice (`--port 0`); the test learns it, and a made token,
from the lines the server writes on stderr once its socket listens (an event, not a
sleep). Its stderr is kept whole, so a test can say what the server printed.
"""

from __future__ import annotations

import asyncio
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from tests.kernel.conftest import REPO

START_TIMEOUT = 90.0  # seconds: a loaded CI machine
_URL = re.compile(r"Streamable HTTP at (http://\S+)")
_TOKEN = re.compile(r"token \(send .*\): (\S+)$")


@dataclass
class HttpServer:
    process: subprocess.Popen[str]
    url: str
    token: str
    stderr: list[str] = field(default_factory=list)


def server_env(home: Path, **env: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": str(REPO),
            "LILY_HOME": str(home / ".lily"), "LILY_TRUST": "workspace",
            "LILY_SKILLS_BUNDLED_DIR": str(home / "none"), **env}


@contextmanager
def lily_mcp_http(workspace: Path, home: Path, *args: str, **env: str) -> Iterator[HttpServer]:
    """`lily mcp --http --port 0 [args]` serving `workspace`, until the block ends."""
    command = [sys.executable, "-m", "lily_kernel.cli.main", "mcp", "--workspace",
               str(workspace), "--http", "--port", "0", *args]
    process = subprocess.Popen(command, env=server_env(home, **env), cwd=workspace,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str | None] = queue.Queue()
    said: list[str] = []

    def drain() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            said.append(line.rstrip("\n"))
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=drain, daemon=True).start()
    try:
        url, token = "", env.get("LILY_MCP_TOKEN", "")
        deadline = time.monotonic() + START_TIMEOUT
        while not (url and token):
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.1))
            if line is None:
                raise AssertionError(f"lily mcp --http ended: {said}")
            if found := _URL.search(line):
                url = found.group(1)
            if found := _TOKEN.search(line):
                token = found.group(1)
        yield HttpServer(process, url, token, said)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def _requests(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    header: bytes) -> None:
    """Each request of a client's connection, its head given one more header line."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            line, rest = head.split(b"\r\n", 1)
            fields = rest.lower()
            assert b"transfer-encoding: chunked" not in fields, "a chunked request body"
            found = re.search(rb"(?:^|\r\n)content-length:\s*(\d+)", fields)
            writer.write(line + b"\r\n" + header + rest)
            if found:
                writer.write(await reader.readexactly(int(found.group(1))))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


@contextmanager
def header_proxy(url: str, header: str) -> Iterator[str]:
    """A loopback proxy in front of `url` that adds `header` to every request and
    changes nothing else (the `Host` and `Origin` a client sends reach the server as
    sent): for a client that cannot send a header of its own (the conformance suite,
    modelcontextprotocol/conformance#453). Yields the proxy's URL."""
    target = urlsplit(url)
    extra = header.encode() + b"\r\n"
    loop = asyncio.new_event_loop()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(target.hostname, target.port)
        await asyncio.gather(_requests(reader, up_writer, extra), _pipe(up_reader, writer))

    server = loop.run_until_complete(asyncio.start_server(serve, "127.0.0.1", 0))
    port = server.sockets[0].getsockname()[1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}{target.path}"
    finally:
        loop.call_soon_threadsafe(server.close)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
