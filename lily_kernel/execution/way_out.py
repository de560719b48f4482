"""The sandbox's one way out, as bubblewrap lays it: the session's proxy socket (a Unix
socket in a private folder of Lily's, network/proxy.py) bound in, the bridge script
(network/bridge.py) run before the command to listen on 127.0.0.1:PORT in the sandbox's
own network namespace, and the proxy variables pointing there. The sandbox keeps
`--unshare-net`: nothing else leaves it.

The runtime gives a `WayOut` to the sandbox (`Sandbox.way_out`, runtime/services.py);
this module knows paths and variables, never the proxy or the policy.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PORT", "WayOut"]

# Inside the sandbox (its own network namespace: no other process there holds the port).
PORT = 3128
_FOLDER = "/run/lily-network"  # /run is the sandbox's own (execution/mounts.py)
_BRIDGE = "/run/lily-bridge.py"


@dataclass(frozen=True)
class WayOut:
    """The proxy's socket on the host (`socket`, alone in its private folder) and the
    bridge script that reaches it from inside."""

    socket: Path
    bridge: Path

    def binds(self) -> list[str]:
        """bubblewrap's arguments that show the socket's folder and the bridge inside."""
        return ["--ro-bind", str(self.socket.parent), _FOLDER,
                "--ro-bind", str(self.bridge), _BRIDGE]

    def wrap(self, command: list[str]) -> list[str]:
        """`command` started behind the bridge (Lily's interpreter, shown in every
        sandbox: execution/plan.py)."""
        return [sys.executable, "-I", "-S", _BRIDGE, f"{_FOLDER}/{self.socket.name}",
                str(PORT), "--", *command]

    @property
    def env(self) -> dict[str, str]:
        """The proxy variables, upper- and lower-case as clients read them (curl reads
        only the lower-case http_proxy; pip, requests, urllib, git and uv both). No
        NO_PROXY: a loopback address the policy names exactly (a model server on this
        machine) is the host's, reached through the proxy; a server a run starts in its
        own sandbox is reached with NO_PROXY=localhost set by that run."""
        url = f"http://127.0.0.1:{PORT}"
        names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
        return {**{n: url for n in names}, **{n.lower(): url for n in names}}
