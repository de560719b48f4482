"""The session's proxy: the one way out of the sandbox, a thread of the kernel's process
listening on a Unix socket in a private folder (never a TCP port on the host), speaking
HTTP `CONNECT` (HTTPS, tunnelled end to end) and plain HTTP with an absolute URI.

For each new connection: its head read within MAX_HEAD_BYTES and `head_seconds`
(network/heads.py), its destination put to the `Decider` (which may block while the
person is asked), then the host resolved once and every address checked
(network/addresses.py: loopback, link-local, private… refused unless the verdict says the
policy named the host exactly), and the connection made to exactly the address checked.
A refusal answers at once: the one-line reason in the status line (what pip, requests and
urllib show), an `X-Lily-Refused` header and the body. Every ending is reported
(`Reporter`: the destination, the verdict, the address, the bytes each way).

The API the runtime uses (runtime/services.py)::

    proxy = SessionProxy.start(folder, decide, report)  # folder: private, mode 0700
    proxy.socket        # the Unix socket the sandbox binds in, with BRIDGE
                        # (execution/way_out.py: WayOut(proxy.socket, BRIDGE))
    proxy.stop()        # idempotent; at the session's end (the folder removed)

`decide` is called on the connection's own thread (it may block while the person is
asked; it should give up when the session ends); `report` on that thread too, once per
connection that named a destination. Neither may raise into the proxy:
a Decider that fails refuses, a Reporter that fails is ignored.

The sandbox reaches the socket through network/bridge.py, run inside it before the
command: it listens on 127.0.0.1 in the sandbox's own network namespace and hands each
connection it accepts to the proxy over the socket (the descriptor itself, SCM_RIGHTS),
so the bytes cross no relay inside the sandbox; a client may also speak HTTP on the
socket directly. Each connection has a thread of its own (two while it relays), at most
`max_connections` at once; past that, a refusal at once. The bytes of a connection let
through are copied by splice(2) in a process of the proxy's own (network/splicer.py),
so that the kernel's other threads, holding the GIL, do not slow them.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from lily_kernel.network.addresses import (
    NAMED_MAY_REACH,
    Resolver,
    is_address,
    refused_kind,
    resolve_host,
)
from lily_kernel.network.decisions import Decider, Destination, Finished, Reporter, Verdict
from lily_kernel.network.heads import BadRequestError, parse_head, read_head
from lily_kernel.network.relay import copy, relay, send_request
from lily_kernel.network.splicer import Splicer
from lily_kernel.prompting import network_refusals as words

__all__ = ["BRIDGE", "MAX_CONNECTIONS", "SessionProxy", "refuse_everything"]

# The script the sandbox runs before the command to reach the socket (execution/way_out.py).
BRIDGE = Path(__file__).with_name("bridge.py")
MAX_CONNECTIONS = 256
HEAD_SECONDS = 10.0
CONNECT_SECONDS = 10.0


def refuse_everything(destination: Destination) -> Verdict:
    """The Decider of a session whose policy opens nothing: every host refused, at once."""
    return Verdict(False, "policy", words.no_network(destination.host))


class _RefusedError(Exception):
    def __init__(self, status: int, verdict: Verdict) -> None:
        super().__init__(verdict.reason)
        self.status, self.verdict = status, verdict


def _phrase(reason: str) -> str:
    """`reason` as a status line's phrase and a header's value may hold it."""
    text = reason.encode("ascii", "replace").decode("ascii")
    return "".join(c if c.isprintable() else " " for c in text)[:300]


class SessionProxy:
    """One session's proxy (see the module's docstring). `resolve` is the resolver seam
    (tests point a name elsewhere between two connections)."""

    def __init__(self, folder: Path, decide: Decider, report: Reporter, *,
                 resolve: Resolver = resolve_host, max_connections: int = MAX_CONNECTIONS,
                 head_seconds: float = HEAD_SECONDS,
                 connect_seconds: float = CONNECT_SECONDS) -> None:
        self.folder = folder
        self.socket = folder / "proxy.sock"
        self.decide, self.report, self.resolve = decide, report, resolve
        self.max_connections = max_connections
        self.head_seconds, self.connect_seconds = head_seconds, connect_seconds
        self._listener: socket.socket | None = None
        self._lock = threading.Lock()
        self._serving = 0
        self._sockets: set[socket.socket] = set()  # every open one, closed by stop()
        self._stopped = False
        self._splicer = Splicer()  # its process started at the first connection let through
        self._thread = threading.Thread(target=self._accept, name="lily-network-proxy",
                                        daemon=True)

    @classmethod
    def start(cls, folder: Path, decide: Decider, report: Reporter,
              **options: Any) -> SessionProxy:
        """A proxy listening on `folder`/proxy.sock (the folder made private first)."""
        info = os.stat(folder, follow_symlinks=False)
        if info.st_uid != os.getuid():
            raise OSError(f"{folder} is not this user's")
        os.chmod(folder, 0o700)
        proxy = cls(folder, decide, report, **options)
        with contextlib.suppress(FileNotFoundError):
            proxy.socket.unlink()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(proxy.socket))
            os.chmod(proxy.socket, 0o600)
            listener.listen(1024)
        except OSError:
            listener.close()
            raise
        proxy._listener = listener
        proxy._thread.start()
        return proxy

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        """Stop listening and end every connection (idempotent)."""
        with self._lock:
            self._stopped = True
            listener, self._listener = self._listener, None
            sockets = list(self._sockets)
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for sock in sockets:  # their threads see the end and finish
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(10)
        self._splicer.close()
        with contextlib.suppress(OSError):
            self.socket.unlink()
        with contextlib.suppress(OSError):
            self.folder.rmdir()

    def _keep(self, sock: socket.socket) -> bool:
        """Count `sock` among the open ones (False once the proxy stopped)."""
        with self._lock:
            if self._stopped:
                return False
            self._sockets.add(sock)
            return True

    def _drop(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)
        sock.close()

    def _accept(self) -> None:
        while (listener := self._listener) is not None:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # stopped
            with self._lock:
                full = self._serving >= self.max_connections
                self._serving += 0 if full else 1
            if full:  # refused at once, on the bridge's handoff if it came already
                target: socket.socket | None = None
                with contextlib.suppress(OSError):
                    _, fds = _receive(conn, 1, socket.MSG_DONTWAIT)
                    target = _handed(fds) if fds else None
                _refuse(target or conn, 503, words.too_many(self.max_connections))
                for sock in (target, conn):
                    if sock is not None:
                        sock.close()
                continue
            threading.Thread(target=self._serve, args=(conn,), name="lily-network-conn",
                             daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        client: socket.socket | None = None
        try:
            if not self._keep(conn):
                return
            deadline = time.monotonic() + self.head_seconds
            conn.settimeout(self.head_seconds)
            first, fds = _receive(conn, 65536)
            if fds:  # the bridge's handoff: the client's own connection, in the sandbox
                client, first = _handed(fds), b""
                if client is None or not self._keep(client):
                    return
            self._handle(client or conn, first, deadline)
        except OSError:
            pass  # the client or the server went away, or the proxy stops
        finally:
            for sock in (client, conn):
                if sock is not None:
                    self._drop(sock)
            with self._lock:
                self._serving -= 1

    def _handle(self, client: socket.socket, first: bytes, deadline: float) -> None:
        def receive() -> bytes:
            client.settimeout(max(0.001, deadline - time.monotonic()))
            return client.recv(65536)

        try:
            head, rest = read_head(receive, first)
            request = parse_head(head, rest)
        except TimeoutError:
            _refuse(client, 408, words.too_slow(self.head_seconds))
            return
        except BadRequestError as exc:
            _refuse(client, exc.status, words.bad_request(exc.why))
            return
        client.settimeout(None)
        destination = request.destination
        try:
            verdict = self.decide(destination)
        except Exception:  # noqa: BLE001 - a Decider that failed answered no
            verdict = Verdict(False, "no-answer", words.no_network(destination.host))
        if not verdict.allowed:
            _refuse(client, 403, verdict.reason or words.no_network(destination.host))
            self._finished(Finished(destination, verdict, "", 0, 0))
            return
        try:
            upstream, address = self._connect(destination, verdict)
        except _RefusedError as refused:
            _refuse(client, refused.status, refused.verdict.reason)
            self._finished(Finished(destination, refused.verdict, "", 0, 0))
            return
        counts = [0, 0]
        try:
            if not self._keep(upstream):
                return
            if request.tunnel:
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                relay(client, upstream, counts,
                      lambda: copy(client, upstream, counts, 0, self._splicer),
                      request.rest, upstream.sendall, self._splicer)
            else:
                relay(client, upstream, counts, lambda: send_request(request, client,
                                                                     upstream, counts),
                      splicer=self._splicer)
        finally:
            self._drop(upstream)
            self._finished(Finished(destination, verdict, address, counts[0], counts[1]))

    def _finished(self, finished: Finished) -> None:
        with contextlib.suppress(Exception):  # a reporter's failure ends nothing here
            self.report(finished)

    def _connect(self, destination: Destination, verdict: Verdict
                 ) -> tuple[socket.socket, str]:
        """A connection to the destination's host, resolved once, every address checked
        (unless named exactly), to exactly an address checked."""
        host, port = destination.host, destination.port
        try:
            addresses = [host] if is_address(host) else self.resolve(host, port)
        except Exception as exc:  # noqa: BLE001 - any resolver's failure: not resolved
            raise _RefusedError(502, Verdict(True, verdict.decided_by, words.not_resolved(
                host, str(exc)[:120]))) from None
        if not addresses:
            raise _RefusedError(502, Verdict(True, verdict.decided_by,
                                             words.not_resolved(host, "no address")))
        if not verdict.exact:
            for address in addresses:
                kind = refused_kind(address)
                if kind is not None and not (verdict.named and kind in NAMED_MAY_REACH):
                    raise _RefusedError(403, Verdict(False, "refused-address", words.address_refused(
                        host, address, kind, by_name=kind in NAMED_MAY_REACH)))
        why = ""
        for address in addresses:
            sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET)
            try:  # the address itself, a literal: nothing is looked up again
                sock.settimeout(self.connect_seconds)
                sock.connect((address, port))
            except OSError as exc:
                sock.close()
                why = "no answer in time" if isinstance(exc, TimeoutError) else (
                    exc.strerror or str(exc))
                continue
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock, address
        raise _RefusedError(502, Verdict(True, verdict.decided_by,
                                         words.unreachable(host, port, why)))


def _receive(conn: socket.socket, size: int, flags: int = 0) -> tuple[bytes, list[int]]:
    """Up to `size` bytes from `conn` and the descriptors that came with them (the
    standard library's `socket.recv_fds` drops its `flags`)."""
    import array

    fds = array.array("i")
    data, ancillary, _, _ = conn.recvmsg(size, socket.CMSG_SPACE(4 * fds.itemsize),
                                         flags | socket.MSG_CMSG_CLOEXEC)
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    return data, list(fds)


def _handed(fds: list[int]) -> socket.socket | None:
    """The TCP connection the bridge handed over (its first descriptor; any other closed,
    and one that is not a TCP stream socket refused)."""
    for extra in fds[1:]:
        os.close(extra)
    try:
        sock = socket.socket(fileno=fds[0])
    except OSError:
        os.close(fds[0])
        return None
    if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
        sock.close()
        return None
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _refuse(client: socket.socket, status: int, reason: str) -> None:
    """Answer `status` with `reason` (status line, header, body)."""
    phrase = _phrase(reason)
    body = (reason + "\n").encode("utf-8", "replace")
    with contextlib.suppress(OSError):
        client.settimeout(5)
        client.sendall(f"HTTP/1.1 {status} {phrase}\r\nX-Lily-Refused: {phrase}\r\n"
                       "Content-Type: text/plain; charset=utf-8\r\n"
                       f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                       .encode("ascii") + body)
