"""Moving a connection's bytes once the proxy (proxy.py) has let it through: the answer
copied back on the connection's thread, what the client sends on a thread of its own (the
copies themselves in the splicer's process: splicer.py), a plain-HTTP request re-framed
by h11; byte counts kept for the connection's report."""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any

from lily_kernel.network.heads import ProxyRequest
from lily_kernel.network.splicer import CopyEndedError, Splicer, splice_all

__all__ = ["CHUNK", "CLOSE_SECONDS", "copy", "relay", "send_request"]

# Once the answer has ended, how long the client may still send before both are closed.
CLOSE_SECONDS = 5.0
CHUNK = 256 * 1024  # a read through Python's buffers (a socket with a timeout, h11)


def copy(source: socket.socket, target: socket.socket, counts: list[int], side: int,
         splicer: Splicer | None = None) -> None:
    """Copy until the source's end, then half-close the target: where the sockets block,
    by splice(2) in the kernel (splicer.py), in the splicer's process when there is one
    (the GIL of the kernel's process not needed), else on this thread; else (a socket
    with a timeout) through a buffer."""
    if source.gettimeout() is None and target.gettimeout() is None:
        try:
            moved = splicer.copy(source, target) if splicer is not None else None
        except CopyEndedError as ended:
            counts[side] += ended.moved
            raise
        if moved is not None:
            counts[side] += moved
            return

        def count(n: int) -> None:
            counts[side] += n

        splice_all(source.fileno(), target.fileno(), count)
    else:
        while data := source.recv(CHUNK):
            counts[side] += len(data)
            target.sendall(data)
    target.shutdown(socket.SHUT_WR)


def relay(client: socket.socket, upstream: socket.socket, counts: list[int],
           sending: Any, rest: bytes = b"", send: Any = None,
           splicer: Splicer | None = None) -> None:
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
        copy(upstream, client, counts, 1, splicer)
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
