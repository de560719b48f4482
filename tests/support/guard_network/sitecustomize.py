"""Put this folder on PYTHONPATH to fail, and record, any connection a process makes
beyond the loopback interface (the test suite's network guard, for kernel processes and
Jupyter servers). Each attempt is appended to the file named by LILY_TEST_NETWORK_LOG
and refused.

A test may also give itself hosts "on the internet" that are really servers on this
machine's loopback: `LILY_TEST_PUBLIC_NAMES` lists `name=address>port` entries
(comma-separated); `name` resolves to `address` (a global address, so Lily's proxy
checks it as it does a real public host's), and a connection to `address` on any port
is made to 127.0.0.1:`port` instead. Only the name resolution and the route are
simulated; the code deciding and connecting is Lily's own, unchanged.
"""

import ipaddress
import os
import socket
from typing import Any

_LOG = os.environ.get("LILY_TEST_NETWORK_LOG", "")
_NAMES: dict[str, str] = {}
_ROUTES: dict[str, int] = {}
for _entry in filter(None, os.environ.get("LILY_TEST_PUBLIC_NAMES", "").split(",")):
    _name, _, _rest = _entry.partition("=")
    _address, _, _port = _rest.partition(">")
    _NAMES[_name] = _address
    _ROUTES[_address] = int(_port)


def _loopback(host: object) -> bool:
    if host in (None, "", "localhost"):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _refuse(what: str) -> None:
    if _LOG:
        with open(_LOG, "a", encoding="utf-8") as log:
            log.write(what + "\n")
    raise OSError(f"network access refused in tests: {what}")


_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex
_getaddrinfo = socket.getaddrinfo


def _routed(sock: socket.socket, address: Any) -> Any:
    if sock.family not in (socket.AF_INET, socket.AF_INET6) or not isinstance(address, tuple):
        return address
    if address[0] in _ROUTES:
        return ("127.0.0.1", _ROUTES[address[0]])
    if not _loopback(address[0]):
        _refuse(f"connect {address!r}")
    return address


def _guarded_connect(sock, address):  # type: ignore[no-untyped-def]
    return _connect(sock, _routed(sock, address))


def _guarded_connect_ex(sock, address):  # type: ignore[no-untyped-def]
    return _connect_ex(sock, _routed(sock, address))


def _guarded_getaddrinfo(host, port, *args, **kwargs):  # type: ignore[no-untyped-def]
    name = host.decode() if isinstance(host, bytes) else host
    if name in _NAMES:
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "",
                 (_NAMES[name], int(port or 0)))]
    if not _loopback(name):
        _refuse(f"resolve {host!r}")
    return _getaddrinfo(host, port, *args, **kwargs)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
socket.getaddrinfo = _guarded_getaddrinfo
