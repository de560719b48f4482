"""`lily mcp --http`: the same server over Streamable HTTP at `/mcp`, for clients that
reach a URL rather than start a program.

What guards it is fastmcp's, configured here, not written here:
- a bearer token on every request (`StaticTokenVerifier` behind fastmcp's
  `RequireAuthMiddleware`: none or a wrong one is `401` with `WWW-Authenticate`), the
  person's `LILY_MCP_TOKEN` or one made at start and said once on stderr;
- the `Host` and `Origin` checks the MCP specification asks of a local server against
  DNS rebinding (fastmcp's `HostOriginGuardMiddleware`, strict: a `Host` that is not
  the server's is `421`; a browser's `Origin` from elsewhere is `403`; a request
  without `Origin`, as non-browser clients send, and a loopback page's are let through).

The socket is bound before the session starts, so a port in use is one clear line, and
its real port (for `--port 0`) is the one said. Bound where the CLI says (127.0.0.1
unless `--host` says otherwise); another host is reachable from the network, which is
said at start.
"""

from __future__ import annotations

import ipaddress
import secrets
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lily_kernel.errors import UsageError

if TYPE_CHECKING:
    from fastmcp import FastMCP

__all__ = ["PATH", "TOKEN_VARIABLE", "HttpEndpoint", "bind_endpoint", "serve_http"]

PATH = "/mcp"
TOKEN_VARIABLE = "LILY_MCP_TOKEN"
_TOKEN_BYTES = 32  # secrets.token_urlsafe: 43 characters


@dataclass(frozen=True)
class HttpEndpoint:
    """Where `lily mcp --http` listens (its socket bound) and the token it asks for."""

    host: str
    sock: socket.socket
    token: str
    token_made: bool  # made at start (said once on stderr), not the person's variable

    @property
    def url(self) -> str:
        port = self.sock.getsockname()[1]
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{port}{PATH}"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _is_any(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def bind_endpoint(host: str, port: int, environ: Mapping[str, str]) -> HttpEndpoint:
    """The listening socket and the token; a UsageError when the address cannot be had
    or `LILY_MCP_TOKEN` is set but empty."""
    given = environ.get(TOKEN_VARIABLE)
    if given is not None and not given.strip():
        raise UsageError(f"{TOKEN_VARIABLE} is set but empty: give it a token, or unset "
                         "it for one made at start.")
    token = given.strip() if given is not None else secrets.token_urlsafe(_TOKEN_BYTES)
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
    except (OSError, UnicodeError) as exc:
        raise UsageError(f"--host {host}: cannot listen there ({exc}).") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise UsageError(f"--host {host} --port {port}: cannot listen there "
                         f"({exc.strerror or exc}).") from None
    return HttpEndpoint(host, sock, token, given is None)


def announce(endpoint: HttpEndpoint) -> None:
    """Where to connect, with which token, on stderr (the token only when made here:
    the person's own is theirs to know; never in a log)."""
    say = sys.stderr.write
    say(f"lily mcp: Streamable HTTP at {endpoint.url}\n")
    if endpoint.token_made:
        say(f"lily mcp: token (send `Authorization: Bearer <token>`; set {TOKEN_VARIABLE} "
            f"to choose it): {endpoint.token}\n")
    else:
        say(f"lily mcp: token: the one in {TOKEN_VARIABLE} (send `Authorization: Bearer "
            "<token>`)\n")
    if not is_loopback(endpoint.host):
        say(f"lily mcp: {endpoint.host} is reachable from other machines: every request "
            "needs the token, and plain HTTP carries it unencrypted (put TLS in front, "
            "or keep to 127.0.0.1)\n")
    sys.stderr.flush()


async def serve_http(server: FastMCP, endpoint: HttpEndpoint) -> None:
    """Serve until interrupted (SIGINT, SIGTERM: uvicorn's graceful end)."""
    from fastmcp.server.auth.providers.jwt import StaticTokenVerifier

    server.auth = StaticTokenVerifier({endpoint.token: {"client_id": "lily-mcp-client",
                                                        "scopes": []}})
    # The Host check: the names of loopback and the bound address always; the name the
    # person gave (`--host my-box.local`), or any name when bound to every address.
    hosts = ["*"] if _is_any(endpoint.host) else [endpoint.host]
    announce(endpoint)
    await server.run_http_async(
        show_banner=False, transport="http", path=PATH, log_level="WARNING",
        host=endpoint.host, port=endpoint.sock.getsockname()[1], sockets=[endpoint.sock],
        host_origin_protection=True, allowed_hosts=hosts,
        uvicorn_config={"access_log": False})
