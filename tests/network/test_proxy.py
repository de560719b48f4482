"""The session's proxy over its real Unix socket, to real loopback servers: CONNECT and
plain HTTP let through when the Decider allows, refused fast with the reason otherwise;
addresses checked after one resolution; the attacks of issue 36 (another loopback port,
CONNECT to 22, header smuggling, a name re-pointed, 1,000 connections, a slow client)."""

from __future__ import annotations

import os
import socket
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lily_kernel.network import proxy as proxy_module
from lily_kernel.network.decisions import Destination, Finished, Verdict
from lily_kernel.network.proxy import SessionProxy, refuse_everything
from tests.network.servers import (
    EchoServer,
    connect,
    exchange,
    file_server,
    read_all,
    read_head,
)
from tests.support.waiting import wait_until

ALLOW = Verdict(True, "policy")
EXACT = Verdict(True, "policy", exact=True)


class Recorded:
    """A Decider answering `verdict` for every destination, and a Reporter: both record."""

    def __init__(self, verdict: Verdict | Callable[[Destination], Verdict]) -> None:
        self.verdict = verdict
        self.asked: list[Destination] = []
        self.finished: list[Finished] = []

    def decide(self, destination: Destination) -> Verdict:
        self.asked.append(destination)
        return self.verdict(destination) if callable(self.verdict) else self.verdict

    def report(self, finished: Finished) -> None:
        self.finished.append(finished)


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., tuple[SessionProxy, Recorded]]]:
    started: list[SessionProxy] = []

    def make(verdict: Verdict | Callable[[Destination], Verdict] = EXACT,
             **options: object) -> tuple[SessionProxy, Recorded]:
        folder = tmp_path / f"net{len(started)}"
        folder.mkdir()
        recorded = Recorded(verdict)
        proxy = SessionProxy.start(folder, recorded.decide, recorded.report, **options)
        started.append(proxy)
        return proxy, recorded

    yield make
    for proxy in started:
        proxy.stop()


def status(answer: bytes) -> tuple[int, str]:
    line = answer.split(b"\r\n", 1)[0].decode()
    _, code, phrase = line.split(" ", 2)
    return int(code), phrase


def test_connect_tunnels_to_an_allowed_host_and_reports_the_bytes(start) -> None:
    echo = EchoServer()
    proxy, seen = start(EXACT)
    with connect(proxy.socket) as client:
        client.sendall(f"CONNECT 127.0.0.1:{echo.port} HTTP/1.1\r\nHost: x\r\n\r\nhello".encode())
        assert read_head(client).startswith(b"HTTP/1.1 200")
        assert client.recv(5) == b"hello"
        client.sendall(b" world")
        assert client.recv(6) == b" world"
    wait_until(lambda: seen.finished, "the proxy", 5)
    assert seen.asked == [Destination("127.0.0.1", echo.port)]
    done = seen.finished[0]
    assert (done.address, done.bytes_sent, done.bytes_received) == ("127.0.0.1", 11, 11)
    echo.close()


def test_plain_http_is_forwarded_in_origin_form(start, tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("the file\n")
    proxy, seen = start(EXACT)
    with file_server(tmp_path) as port:
        answer = exchange(proxy.socket, f"GET http://127.0.0.1:{port}/data.txt HTTP/1.1\r\n"
                          "Host: elsewhere.example\r\nProxy-Connection: keep-alive\r\n\r\n".encode())
        assert status(answer)[0] == 200 and answer.endswith(b"the file\n")
        chunked = exchange(proxy.socket, f"POST http://127.0.0.1:{port}/ HTTP/1.1\r\n"
                           "Host: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                           "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n".encode())
        assert chunked.endswith(b"hello world")
    wait_until(lambda: len(seen.finished) == 2, "the proxy", 5)
    assert all(f.bytes_received > 0 for f in seen.finished)


def test_a_refused_host_answers_403_with_the_reason_fast(start) -> None:
    proxy, seen = start(refuse_everything)
    began = time.perf_counter()
    answer = exchange(proxy.socket, b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org\r\n\r\n")
    elapsed = time.perf_counter() - began
    code, phrase = status(answer)
    reason = ("blocked by Lily's network policy: pypi.org (not allowed; ask the person or "
              "add it to network.allow)")
    assert (code, phrase) == (403, reason)
    assert f"X-Lily-Refused: {reason}".encode() in answer and answer.endswith(
        reason.encode() + b"\n")
    assert elapsed < 1.0  # at once (benchmarks/network_proxy.py times it: ~15 ms)
    wait_until(lambda: seen.finished, "the proxy", 5)
    assert seen.finished[0].verdict.allowed is False and seen.finished[0].address == ""


@pytest.mark.parametrize(("address", "kind"), [
    ("127.0.0.1", "loopback"), ("10.0.0.7", "private"), ("169.254.169.254", "cloud metadata"),
    ("fd00:ec2::254", "cloud metadata"), ("::ffff:127.0.0.1", "loopback"),
    ("0.0.0.0", "unspecified"), ("fe80::1", "link-local"), ("100.64.1.1", "non-public"),
])
def test_addresses_off_the_internet_are_refused_unless_named_exactly(start, address: str,
                                                                     kind: str) -> None:
    proxy, seen = start(ALLOW, resolve=lambda host, port: [address])
    answer = exchange(proxy.socket, b"CONNECT files.example:443 HTTP/1.1\r\nHost: x\r\n\r\n")
    code, phrase = status(answer)
    assert code == 403 and f"resolves to {address}, a {kind} address" in phrase
    wait_until(lambda: seen.finished, "the proxy", 5)
    assert seen.finished[0].verdict.decided_by == "refused-address"


NAMED = Verdict(True, "policy", named=True)


@pytest.mark.parametrize("address", ["10.0.0.7", "100.64.1.1", "fd00::7"])
def test_a_host_named_itself_may_resolve_to_a_private_address(
        start, address: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A company's package mirror: the proxy goes on to connect to exactly that address
    # (no such mirror here: its connection is refused, so the answer is "could not
    # connect", never the address refusal).
    tried: list[object] = []
    real = socket.socket.connect

    def refused(sock: socket.socket, where: object) -> None:
        if sock.family == socket.AF_UNIX:  # the proxy's own socket
            return real(sock, where)  # type: ignore[arg-type]
        tried.append(where)
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(socket.socket, "connect", refused)
    proxy, seen = start(NAMED, resolve=lambda host, port: [address])
    answer = exchange(proxy.socket, b"CONNECT pypi.corp.example:443 HTTP/1.1\r\nHost: x\r\n\r\n")
    code, phrase = status(answer)
    assert (code, phrase.split(" (")[0]) == (
        502, "Lily's proxy could not connect to pypi.corp.example port 443")
    assert [w[0] for w in tried if isinstance(w, tuple)] == [address]  # that one only
    wait_until(lambda: seen.finished, "the proxy", 5)
    assert seen.finished[0].verdict.decided_by != "refused-address"


@pytest.mark.parametrize(("address", "kind"), [
    ("127.0.0.1", "loopback"), ("169.254.169.254", "cloud metadata"), ("fe80::1", "link-local"),
    ("::ffff:127.0.0.1", "loopback"), ("0.0.0.0", "unspecified")])
def test_a_host_named_itself_never_reaches_this_machine_or_its_cloud(start, address: str,
                                                                     kind: str) -> None:
    proxy, _ = start(NAMED, resolve=lambda host, port: [address])
    answer = exchange(proxy.socket, b"CONNECT pypi.corp.example:443 HTTP/1.1\r\nHost: x\r\n\r\n")
    code, phrase = status(answer)
    assert code == 403 and phrase.endswith(
        f"a {kind} address (refused unless network.allow names the address exactly, with "
        "its port)")


def test_a_name_resolving_to_a_private_address_says_how_to_open_it(start) -> None:
    proxy, _ = start(ALLOW, resolve=lambda host, port: ["10.0.0.7"])
    answer = exchange(proxy.socket, b"CONNECT pypi.corp.example:443 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status(answer) == (403, (
        "blocked by Lily's network policy: pypi.corp.example resolves to 10.0.0.7, a private "
        "address (refused unless network.allow names pypi.corp.example itself (no wildcard))"))


def test_a_name_resolving_to_loopback_is_refused(start) -> None:
    # `localhost` through the system's resolver (/etc/hosts): a name, never named exactly.
    echo = EchoServer()
    proxy, _ = start(ALLOW)
    answer = exchange(proxy.socket, f"CONNECT localhost:{echo.port} HTTP/1.1\r\n"
                      "Host: x\r\n\r\n".encode())
    assert status(answer)[0] == 403 and b"a loopback address" in answer
    assert echo.peers == []
    echo.close()


def test_another_loopback_port_is_not_reached_through_an_allowed_pattern(start) -> None:
    # The proxy used to reach the Jupyter server's port: the policy allows the host by a
    # pattern (not exactly), so the loopback address stays refused.
    jupyter = EchoServer()
    proxy, _ = start(ALLOW)
    answer = exchange(proxy.socket, f"GET http://127.0.0.1:{jupyter.port}/api/kernels "
                      "HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert status(answer)[0] == 403 and jupyter.peers == []
    jupyter.close()


def test_connect_to_port_22_is_the_deciders_to_refuse(start) -> None:
    proxy, seen = start(lambda d: EXACT if d.port == 443 else Verdict(
        False, "policy", f"blocked by Lily's network policy: {d.host} port {d.port}"))
    answer = exchange(proxy.socket, b"CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status(answer) == (403, "blocked by Lily's network policy: 127.0.0.1 port 22")
    assert seen.asked == [Destination("127.0.0.1", 22)]


@pytest.mark.parametrize(("request_bytes", "code"), [
    (b"POST http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n", 400),
    (b"POST http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
     b"Content-Length: 40\r\n\r\nabcd", 400),
    (b"GET http://127.0.0.1:{port}/ HTTP/1.1\nHost: x\n\n", 400),
    (b"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: x\r\nX: a\r\n folded\r\n\r\n", 400),
    (b"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 20_000 + b"\r\n\r\n",
     431),
    (b"POST http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, "
     b"chunked\r\n\r\n", 501),
    (b"GET https://127.0.0.1:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    (b"GET http://user@127.0.0.1:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    (b"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", 400),
])
def test_smuggling_shapes_are_refused_before_anyone_is_asked(start, request_bytes: bytes,
                                                             code: int) -> None:
    target = EchoServer()
    proxy, seen = start(EXACT)
    answer = exchange(proxy.socket, request_bytes.replace(b"{port}", str(target.port).encode()))
    assert status(answer)[0] == code and b"malformed request" in answer
    assert seen.asked == [] and target.peers == []
    target.close()


def test_a_name_re_pointed_is_checked_again_and_resolved_once_per_connection(
        start, monkeypatch: pytest.MonkeyPatch) -> None:
    # 127.0.0.2 stands for an address on the internet in this test; 127.0.0.1 for the
    # machine. The name answers the first, then the second, alternately: a proxy that
    # looked the name up again to connect would reach 127.0.0.1.
    monkeypatch.setattr(proxy_module, "refused_kind",
                        lambda a: None if a == "127.0.0.2" else "loopback")
    # Both listen on one port number: only the address tells them apart.
    public = EchoServer("127.0.0.2")
    private = EchoServer("127.0.0.1", public.port)
    answers = iter(["127.0.0.2", "127.0.0.1"] * 10)
    lookups: list[str] = []

    def resolve(host: str, port: int) -> list[str]:
        lookups.append(host)
        return [next(answers)]

    proxy, _ = start(ALLOW, resolve=resolve)
    port = public.port
    with connect(proxy.socket) as client:
        client.sendall(f"CONNECT files.example:{port} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert read_head(client).startswith(b"HTTP/1.1 200")
        client.sendall(b"ping")
        assert client.recv(4) == b"ping"
    assert len(public.peers) == 1
    assert lookups == ["files.example"]
    second = exchange(proxy.socket, f"CONNECT files.example:{port} HTTP/1.1\r\n"
                      "Host: x\r\n\r\n".encode())
    assert status(second)[0] == 403 and b"resolves to 127.0.0.1" in second
    assert private.peers == []
    public.close()
    private.close()


def test_a_thousand_connections_are_bounded_and_the_proxy_still_answers(start) -> None:
    proxy, _ = start(refuse_everything, max_connections=100, head_seconds=30)
    clients = []
    try:
        for _ in range(1000):
            clients.append(connect(proxy.socket, timeout=10))
        # Those past the limit were refused at once with the reason; the rest are held.
        refused = 0
        for client in clients[100:]:
            answer = read_all(client)
            assert status(answer)[0] == 503 and b"100 connections" in answer
            refused += 1
        assert refused == 900
    finally:
        for client in clients:
            client.close()
    began = time.perf_counter()
    later = wait_until(lambda: _answered(proxy.socket), "the proxy", 10)
    assert later is not None and status(later)[0] == 403
    assert time.perf_counter() - began < 10


def _answered(path: Path) -> bytes | None:
    answer = exchange(path, b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: x\r\n\r\n")
    return answer if answer.startswith(b"HTTP/1.1 403") else None


def test_a_slow_client_is_cut_off_and_others_are_served_meanwhile(start) -> None:
    proxy, seen = start(refuse_everything, head_seconds=3)
    with connect(proxy.socket) as slow:
        slow.sendall(b"CONNECT pypi.org:443 HTTP/1.1\r\n")
        began = time.perf_counter()
        other = exchange(proxy.socket, b"CONNECT a.example:443 HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status(other)[0] == 403
        assert time.perf_counter() - began < 2.5  # not held behind the slow one
        slow.sendall(b"X-Slow: 1\r\n")
        answer = read_all(slow)
    assert status(answer)[0] == 408 and b"waited 3 s" in answer
    assert [d.host for d in seen.asked] == ["a.example"]


def test_the_proxy_listens_on_its_socket_only_in_a_private_folder(start) -> None:
    def listening() -> set[str]:
        found = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with open(table) as lines:
                found |= {line.split()[1] for line in list(lines)[1:]
                          if line.split()[3] == "0A"}
        return found

    before = listening()
    proxy, _ = start(EXACT)
    assert listening() <= before  # no TCP port of its own on the host
    assert stat.S_ISSOCK(os.stat(proxy.socket).st_mode)
    assert stat.S_IMODE(os.stat(proxy.socket.parent).st_mode) == 0o700
    proxy.stop()
    proxy.stop()  # idempotent
    assert not proxy.socket.parent.exists()
    with pytest.raises(OSError):
        socket.socket(socket.AF_UNIX).connect(str(proxy.socket))


def test_a_tcp_connection_handed_over_the_socket_is_served(start) -> None:
    # What the bridge does in the sandbox: the accepted connection itself, SCM_RIGHTS.
    proxy, seen = start(refuse_everything)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        client = socket.create_connection(listener.getsockname())
        accepted, _ = listener.accept()
    with client, accepted, connect(proxy.socket) as handoff:
        socket.send_fds(handoff, [b"\0"], [accepted.fileno()])
        accepted.close()
        client.settimeout(10)
        client.sendall(b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org\r\n\r\n")
        assert status(read_all(client))[0] == 403
    assert [d.host for d in seen.asked] == ["pypi.org"]


def test_a_handed_descriptor_that_is_not_a_tcp_connection_is_refused(start) -> None:
    proxy, seen = start(EXACT)
    read_end, write_end = os.pipe()
    try:
        with connect(proxy.socket) as handoff:
            socket.send_fds(handoff, [b"\0"], [write_end])
            assert read_all(handoff) == b""  # closed, nothing written anywhere
        os.close(write_end)
        write_end = -1
        os.set_blocking(read_end, False)
        assert os.read(read_end, 100) == b""  # the proxy kept no copy of the pipe
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)
    assert seen.asked == []
