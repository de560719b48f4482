"""A client's request to the proxy, read and checked before anyone is asked about it: the
head read within a size and a deadline, parsed by h11 (a well-kept HTTP/1.1 parser), and
refused for what h11 lets through but a proxy must not (a bare LF, a folded header, both
Content-Length and Transfer-Encoding: the shapes of request smuggling).

Two forms reach Lily's proxy: `CONNECT host:port` (a tunnel: HTTPS, end to end) and a
plain-HTTP request with an absolute URI (`GET http://host/path`), forwarded by h11 as
one request with `Connection: close`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from lily_kernel.network.addresses import parse_authority
from lily_kernel.network.decisions import Destination

if TYPE_CHECKING:
    import h11

__all__ = ["MAX_HEAD_BYTES", "BadRequestError", "ProxyRequest", "parse_head", "read_head"]

MAX_HEAD_BYTES = 16 * 1024
_BARE_LF = re.compile(rb"(?<!\r)\n")
# Hop-by-hop headers: the proxy's and one connection's, never forwarded.
_HOP = {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization",
        b"proxy-authenticate", b"te", b"trailer", b"upgrade", b"host"}


class BadRequestError(Exception):
    """A request the proxy refuses to read on: the HTTP status and why."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status
        self.why = why


@dataclass(frozen=True)
class ProxyRequest:
    """What a client asked the proxy: a tunnel (`tunnel`) or one plain-HTTP request (its
    method, origin-form target and end-to-end headers), where to, and the bytes it sent
    past the head (`rest`: the start of a body or of TLS)."""

    destination: Destination
    tunnel: bool
    method: bytes = b""
    target: bytes = b""
    headers: tuple[tuple[bytes, bytes], ...] = ()
    rest: bytes = b""
    parser: h11.Connection | None = None  # reads the body that follows (plain HTTP)


def read_head(receive: Callable[[], bytes], first: bytes = b"") -> tuple[bytes, bytes]:
    """The request's head (through its blank line) and what came after it, from `first`
    and then `receive()` (which bounds the time: socket.timeout). Raises BadRequestError
    on a bare LF or a head over MAX_HEAD_BYTES."""
    data = first
    while True:
        end = data.find(b"\r\n\r\n", 0, MAX_HEAD_BYTES + 4)
        if end >= 0:
            end += 4
            if _BARE_LF.search(data, 0, end):
                raise BadRequestError(400, "a line ends in a bare LF")
            return data[:end], data[end:]
        if _BARE_LF.search(data):
            raise BadRequestError(400, "a line ends in a bare LF")
        if len(data) >= MAX_HEAD_BYTES + 4:
            raise BadRequestError(431, f"its headers exceed {MAX_HEAD_BYTES // 1024} KiB")
        chunk = receive()
        if not chunk:
            raise BadRequestError(400, "the connection closed before the headers ended")
        data += chunk


def parse_head(head: bytes, rest: bytes) -> ProxyRequest:
    """The request `head` says (`rest`: the bytes after it). Raises BadRequestError."""
    import h11

    if re.search(rb"\r\n[ \t]", head):
        raise BadRequestError(400, "a header is folded over two lines")
    parser = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
    parser.receive_data(head)
    try:
        event = parser.next_event()
    except h11.RemoteProtocolError as exc:
        raise BadRequestError(exc.error_status_hint, str(exc)[:200]) from None
    if not isinstance(event, h11.Request):
        raise BadRequestError(400, "no request line")
    names = [name for name, _ in event.headers]
    if b"transfer-encoding" in names and b"content-length" in names:
        raise BadRequestError(400, "both Content-Length and Transfer-Encoding")
    target = event.target.decode("ascii", "replace")
    try:
        if event.method == b"CONNECT":
            if b"transfer-encoding" in names or b"content-length" in names:
                raise BadRequestError(400, "a CONNECT with a body")
            host, port = parse_authority(target)
            return ProxyRequest(Destination(host, port), tunnel=True, rest=rest)
        url = urlsplit(target)
        if url.scheme != "http" or not url.netloc:
            raise BadRequestError(400, "not a CONNECT or an absolute http:// URI")
        if "@" in url.netloc:
            raise BadRequestError(400, "credentials in the URI's host")
        host, port = parse_authority(url.netloc, 80)
    except ValueError as exc:
        raise BadRequestError(400, f"the destination: {exc}") from None
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    authority = url.netloc.encode("ascii")
    kept = tuple((name, value) for name, value in event.headers if name not in _HOP)
    parser.receive_data(rest)
    return ProxyRequest(Destination(host, port), tunnel=False, method=event.method,
                        target=path.encode("ascii"), headers=((b"host", authority), *kept),
                        parser=parser)
