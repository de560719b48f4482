"""Moving a connection's bytes once the proxy (proxy.py) has let it through: the answer
copied back on the connection's thread, what the client sends on a thread of its own, a
plain-HTTP request re-framed by h11; byte counts kept for the connection's report."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import socket
import threading
from typing import Any

from lily_kernel.network.heads import ProxyRequest

__all__ = ["CHUNK", "CLOSE_SECONDS", "copy", "relay", "send_request"]

# Once the answer has ended, how long the client may still send before both are closed.
CLOSE_SECONDS = 5.0
CHUNK = 256 * 1024  # a read through Python's buffers (a socket with a timeout, h11)
PIPE_BYTES = 1024 * 1024  # the largest splice pipe asked for


def copy(source: socket.socket, target: socket.socket, counts: list[int], side: int) -> None:
    """Copy until the source's end, then half-close the target: in the kernel (splice
    through a pipe, no copy into Python) where the sockets block, else through a buffer."""
    if source.gettimeout() is None and target.gettimeout() is None:
        _splice(source.fileno(), target.fileno(), counts, side)
    else:
        while data := source.recv(CHUNK):
            counts[side] += len(data)
            target.sendall(data)
    target.shutdown(socket.SHUT_WR)


def _splice(source: int, target: int, counts: list[int], side: int) -> None:
    """Linux's splice(2), socket to pipe to socket: the bytes stay in the kernel, Python
    runs once per read (SPLICE_F_MOVE is a no-op since Linux 2.6.21). The pipe starts at
    Linux's default and grows, up to `pipe_limit()`, while reads fill it (a download,
    not a chat): fewer, larger reads, less of the proxy's CPU and of the GIL per
    megabyte (docs/benchmarks.md), pipe memory only for the connections that move bulk."""
    out, into = os.pipe()
    try:
        size, limit = fcntl.fcntl(into, fcntl.F_GETPIPE_SZ), pipe_limit()
        while moved := os.splice(source, into, size):
            counts[side] += moved
            if moved * 2 >= size and size < limit:  # (a pipe's slots may fill first)
                with contextlib.suppress(OSError):  # past the user's pipe quota: as it is
                    size = fcntl.fcntl(into, fcntl.F_SETPIPE_SZ, min(size * 4, limit))
            while moved:
                moved -= os.splice(out, target, moved)
    finally:
        os.close(out)
        os.close(into)


@functools.cache
def pipe_limit() -> int:
    """The largest pipe an unprivileged process may ask for (/proc/sys/fs/pipe-max-size,
    1 MiB by default), at most PIPE_BYTES."""
    try:
        with open("/proc/sys/fs/pipe-max-size") as limit:
            return max(4096, min(PIPE_BYTES, int(limit.read())))
    except (OSError, ValueError):
        return 64 * 1024


def relay(client: socket.socket, upstream: socket.socket, counts: list[int],
           sending: Any, rest: bytes = b"", send: Any = None) -> None:
    """`sending` (client to upstream) on a thread of its own, the answer copied back on
    this one; an error in either ends both, and once the answer has ended the client has
    CLOSE_SECONDS to finish."""
    def run() -> None:
        try:
            if rest:
                counts[0] += len(rest)
                send(rest)
            sending()
        except OSError:
            _end(client, upstream)
        except Exception:  # noqa: BLE001 - a malformed body (h11): both end
            _end(client, upstream)

    helper = threading.Thread(target=run, name="lily-network-send", daemon=True)
    helper.start()
    try:
        copy(upstream, client, counts, 1)
    except OSError:
        _end(client, upstream)
    helper.join(CLOSE_SECONDS)
    if helper.is_alive():
        _end(client, upstream)
        helper.join()


def _end(*sockets: socket.socket) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def send_request(request: ProxyRequest, client: socket.socket, upstream: socket.socket,
                  counts: list[int]) -> None:
    """One plain-HTTP request, re-framed by h11 (origin-form, `Connection: close`), its
    body read through the client's parser."""
    import h11

    parser, out = request.parser, h11.Connection(h11.CLIENT)
    assert parser is not None

    def send(event: Any) -> None:
        data = out.send(event) or b""
        counts[0] += len(data)
        upstream.sendall(data)

    send(h11.Request(method=request.method, target=request.target,
                     headers=[*request.headers, (b"connection", b"close")]))
    while True:
        event = parser.next_event()
        if event is h11.NEED_DATA:
            parser.receive_data(client.recv(CHUNK))
        elif isinstance(event, h11.Data):
            send(h11.Data(data=event.data))
        elif isinstance(event, h11.EndOfMessage):
            send(h11.EndOfMessage())
            return
        else:  # the client went away mid-body
            raise ConnectionResetError("the client closed mid-request")
