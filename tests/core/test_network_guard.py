"""The guard that keeps tests off the network must itself work."""

import socket

import pytest

from tests.conftest import NetworkAccessError


def test_connecting_to_a_public_address_fails_the_test() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        with pytest.raises(NetworkAccessError):
            sock.connect(("93.184.216.34", 80))
    finally:
        sock.close()


def test_resolving_a_public_name_fails_the_test() -> None:
    with pytest.raises(NetworkAccessError):
        socket.getaddrinfo("example.com", 443)


def test_loopback_is_allowed() -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        client.connect(server.getsockname())
    finally:
        client.close()
        server.close()
