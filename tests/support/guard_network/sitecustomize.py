"""Put this folder on PYTHONPATH to fail, and record, any connection a process makes
beyond the loopback interface (the test suite's network guard, for kernel processes).

Each attempt is appended to the file named by LILY_TEST_NETWORK_LOG and refused.
"""

import ipaddress
import os
import socket

_LOG = os.environ.get("LILY_TEST_NETWORK_LOG", "")


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


def _guarded_connect(sock, address):  # type: ignore[no-untyped-def]
    if sock.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
        _refuse(f"connect {address!r}")
    return _connect(sock, address)


def _guarded_connect_ex(sock, address):  # type: ignore[no-untyped-def]
    if sock.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
        _refuse(f"connect {address!r}")
    return _connect_ex(sock, address)


def _guarded_getaddrinfo(host, *args, **kwargs):  # type: ignore[no-untyped-def]
    if not _loopback(host):
        _refuse(f"resolve {host!r}")
    return _getaddrinfo(host, *args, **kwargs)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
socket.getaddrinfo = _guarded_getaddrinfo
