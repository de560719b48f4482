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

`decide` is called on a thread of its own for each new connection (it may block while
the person is asked; it should give up when the session ends); `report` on the proxy's
thread, once per connection that named a destination. Neither may raise into the proxy:
a Decider that fails refuses, a Reporter that fails is ignored.

The sandbox reaches the socket through network/bridge.py, run inside it before the
command: it listens on 127.0.0.1 in the sandbox's own network namespace and forwards
each connection to the socket; the proxy variables point there.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from lily_kernel.network.addresses import Resolver, is_address, refused_kind, resolve_host
from lily_kernel.network.decisions import Decider, Destination, Finished, Reporter, Verdict
from lily_kernel.network.heads import BadRequestError, ProxyRequest, parse_head, read_head
from lily_kernel.prompting import network_refusals as words

__all__ = ["BRIDGE", "MAX_CONNECTIONS", "SessionProxy", "refuse_everything"]

# The script the sandbox runs before the command to reach the socket (execution/way_out.py).
BRIDGE = Path(__file__).with_name("bridge.py")

MAX_CONNECTIONS = 256
HEAD_SECONDS = 10.0
CONNECT_SECONDS = 10.0
CHUNK = 256 * 1024
T = TypeVar("T")


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
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._open = 0
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="lily-network-proxy",
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
        proxy._thread.start()
        proxy._ready.wait()
        if proxy._failed is not None:
            raise proxy._failed
        return proxy

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        """Stop listening and end every connection (idempotent)."""
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(stopping.set)
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(10)
        with contextlib.suppress(OSError):
            self.socket.unlink()
        with contextlib.suppress(OSError):
            self.folder.rmdir()

    def _run(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._main())
        except BaseException as exc:  # noqa: BLE001 - said to the starter, never raised here
            self._failed = exc
        finally:
            self._ready.set()
            loop.close()

    async def _main(self) -> None:
        self._stopping = asyncio.Event()
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        server = await asyncio.start_unix_server(self._serve, path=str(self.socket),
                                                 backlog=1024)
        os.chmod(self.socket, 0o600)
        self._ready.set()
        await self._stopping.wait()
        server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _in_thread(self, work: Callable[[], T]) -> asyncio.Future[T]:
        """`work` on a daemon thread of its own (a Decider may block on the person; a
        resolver on the system's): never holds the loop, nor the process at its exit."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def settle(result: T | None, error: BaseException | None) -> None:
            if not future.done():
                if error is not None:
                    future.set_exception(error)
                else:
                    future.set_result(result)  # type: ignore[arg-type]

        def run() -> None:
            try:
                result = work()
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
                loop.call_soon_threadsafe(settle, None, exc)
            else:
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    loop.call_soon_threadsafe(settle, result, None)

        threading.Thread(target=run, name="lily-network-work", daemon=True).start()
        return future

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._open >= self.max_connections:
            await _refuse(writer, 503, words.too_many(self.max_connections))
            return
        self._open += 1
        try:
            await self._handle(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client or the server went away, or the proxy stops
        finally:
            self._open -= 1
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head, rest = await asyncio.wait_for(read_head(reader), self.head_seconds)
            request = parse_head(head, rest)
        except TimeoutError:
            await _refuse(writer, 408, words.too_slow(self.head_seconds))
            return
        except BadRequestError as exc:
            await _refuse(writer, exc.status, words.bad_request(exc.why))
            return
        destination = request.destination
        try:
            verdict = await self._in_thread(lambda: self.decide(destination))
        except Exception:  # noqa: BLE001 - a Decider that failed answered no
            verdict = Verdict(False, "no-answer", words.no_network(destination.host))
        if not verdict.allowed:
            await _refuse(writer, 403, verdict.reason or words.no_network(destination.host))
            self._finished(Finished(destination, verdict, "", 0, 0))
            return
        try:
            upstream, address = await self._connect(destination, verdict)
        except _RefusedError as refused:
            await _refuse(writer, refused.status, refused.verdict.reason)
            self._finished(Finished(destination, refused.verdict, "", 0, 0))
            return
        counts = [0, 0]
        try:
            if request.tunnel:
                await _tunnel(request, reader, writer, upstream, counts)
            else:
                await _forward(request, reader, writer, upstream, counts)
        finally:
            upstream[1].close()
            self._finished(Finished(destination, verdict, address, counts[0], counts[1]))

    def _finished(self, finished: Finished) -> None:
        with contextlib.suppress(Exception):  # a reporter's failure ends nothing here
            self.report(finished)

    async def _connect(self, destination: Destination, verdict: Verdict
                       ) -> tuple[tuple[asyncio.StreamReader, asyncio.StreamWriter], str]:
        """A connection to the destination's host, resolved once, every address checked
        (unless named exactly), to exactly an address checked."""
        host, port = destination.host, destination.port
        try:
            addresses = [host] if is_address(host) else await asyncio.wait_for(
                self._in_thread(lambda: self.resolve(host, port)), self.connect_seconds)
        except Exception as exc:  # noqa: BLE001 - any resolver's failure: not resolved
            why = "no answer in time" if isinstance(exc, TimeoutError) else str(exc)[:120]
            raise _RefusedError(502, Verdict(True, verdict.decided_by,
                                        words.not_resolved(host, why))) from None
        if not addresses:
            raise _RefusedError(502, Verdict(True, verdict.decided_by,
                                        words.not_resolved(host, "no address")))
        if not verdict.exact:
            for address in addresses:
                kind = refused_kind(address)
                if kind is not None:
                    raise _RefusedError(403, Verdict(False, "refused-address",
                                                words.address_refused(host, address, kind)))
        why = ""
        for address in addresses:
            try:
                streams = await asyncio.wait_for(_open(address, port), self.connect_seconds)
            except (OSError, TimeoutError) as exc:
                why = "no answer in time" if isinstance(exc, TimeoutError) else (
                    exc.strerror or str(exc))
                continue
            return streams, address
        raise _RefusedError(502, Verdict(True, verdict.decided_by,
                                    words.unreachable(host, port, why)))


async def _open(address: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A TCP connection to `address` itself (a literal: nothing is looked up again)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await asyncio.get_running_loop().sock_connect(sock, (address, port))
    except BaseException:
        sock.close()
        raise
    return await asyncio.open_connection(sock=sock, limit=CHUNK)


async def _refuse(writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    """Answer `status` with `reason` (status line, header, body) and close."""
    phrase = _phrase(reason)
    body = (reason + "\n").encode("utf-8", "replace")
    writer.write(f"HTTP/1.1 {status} {phrase}\r\nX-Lily-Refused: {phrase}\r\n"
                 "Content-Type: text/plain; charset=utf-8\r\n"
                 f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode("ascii")
                 + body)
    with contextlib.suppress(OSError, TimeoutError):
        await asyncio.wait_for(writer.drain(), 5)
    writer.close()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                counts: list[int], side: int) -> None:
    """Copy until the reader's end, then half-close the writer."""
    while data := await reader.read(CHUNK):
        counts[side] += len(data)
        writer.write(data)
        await writer.drain()
    if writer.can_write_eof():
        with contextlib.suppress(OSError):
            writer.write_eof()


async def _both(*pumps: Any) -> None:
    """Both directions until each has ended; an error in one ends the other."""
    tasks = [asyncio.ensure_future(p) for p in pumps]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _tunnel(request: ProxyRequest, reader: asyncio.StreamReader,
                  writer: asyncio.StreamWriter,
                  upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
                  counts: list[int]) -> None:
    writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
    if request.rest:
        upstream[1].write(request.rest)
        counts[0] += len(request.rest)
    await _both(_pump(reader, upstream[1], counts, 0), _pump(upstream[0], writer, counts, 1))


async def _forward(request: ProxyRequest, reader: asyncio.StreamReader,
                   writer: asyncio.StreamWriter,
                   upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
                   counts: list[int]) -> None:
    """One plain-HTTP request, re-framed by h11 (origin-form, `Connection: close`), its
    body read through the client's parser; the answer copied back until the end."""
    import h11

    parser, out = request.parser, h11.Connection(h11.CLIENT)
    assert parser is not None
    up = upstream[1]

    def send(event: Any) -> None:
        data = out.send(event) or b""
        counts[0] += len(data)
        up.write(data)

    async def body() -> None:
        send(h11.Request(method=request.method, target=request.target,
                         headers=[*request.headers, (b"connection", b"close")]))
        while True:
            event = parser.next_event()
            if event is h11.NEED_DATA:
                data = await reader.read(CHUNK)
                parser.receive_data(data)
                continue
            if isinstance(event, h11.Data):
                send(h11.Data(data=event.data))
                await up.drain()
            elif isinstance(event, h11.EndOfMessage):
                send(h11.EndOfMessage())
                await up.drain()
                return
            else:  # the client went away mid-body
                raise ConnectionResetError("the client closed mid-request")

    async def answer() -> None:
        while data := await upstream[0].read(CHUNK):
            counts[1] += len(data)
            writer.write(data)
            await writer.drain()

    await _both(body(), answer())  # a protocol error in the body ends both
