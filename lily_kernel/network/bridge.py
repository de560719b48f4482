"""The sandbox's end of the way out, run inside bubblewrap before the command
(`python -I -S bridge.py <socket> <port> -- <command…>`, the standard library only): it
listens on 127.0.0.1:<port> in the sandbox's own network namespace, then forks; the child
hands each TCP connection it accepts to the proxy over its Unix socket (bound in) as the
descriptor itself (SCM_RIGHTS), so the proxy reads and writes the client's connection
directly and no byte is relayed inside the sandbox; the parent becomes the command. The
child dies with the sandbox (its process namespace ends with the command), so nothing of
it outlives the run or the session's Python kernel.

Anthropic's sandbox-runtime bridges with socat (a relay); this machine has Python
wherever Lily runs, not always socat.
"""

from __future__ import annotations

import os
import socket
import sys


def _bridge(path: str, listener: socket.socket) -> None:
    """Hand every connection `listener` accepts to the proxy at `path`."""
    while True:
        conn, _ = listener.accept()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as proxy:
                proxy.connect(path)
                socket.send_fds(proxy, [b"\0"], [conn.fileno()])
        except OSError:
            pass  # no proxy: the client sees its connection closed
        finally:
            conn.close()


def main(argv: list[str]) -> None:
    path, port, separator, *command = argv
    if separator != "--" or not command:
        sys.exit("usage: bridge.py <socket> <port> -- <command>")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(port)))
    listener.listen(1024)
    if os.fork() == 0:  # the bridge: its output nowhere (never the run's pipes)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        try:
            _bridge(path, listener)
        finally:
            os._exit(0)
    listener.close()
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
