"""The sandbox's end of the way out, run inside bubblewrap before the command
(`python -I -S bridge.py <socket> <port> -- <command…>`, the standard library only): it
listens on 127.0.0.1:<port> in the sandbox's own network namespace, then forks; the child
forwards each TCP connection to the proxy's Unix socket (bound in), the parent becomes
the command. The child dies with the sandbox (its process namespace ends with the
command), so nothing of it outlives the run or the session's Python kernel.

Anthropic's sandbox-runtime does the same with socat; this machine has Python wherever
Lily runs, not always socat.
"""

from __future__ import annotations

import os
import socket
import sys

CHUNK = 256 * 1024


def _bridge(path: str, listener: socket.socket) -> None:
    """Forward every connection `listener` accepts to the Unix socket `path` (asyncio
    imported here, in the child: the command does not wait for it)."""
    import asyncio

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(CHUNK):
                writer.write(data)
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()
        except OSError:
            writer.close()

    async def forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(path, limit=CHUNK)
        except OSError:
            writer.close()
            return
        try:
            await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))
        finally:
            up_writer.close()
            writer.close()

    async def serve() -> None:
        server = await asyncio.start_server(forward, sock=listener, limit=CHUNK)
        await server.serve_forever()

    asyncio.run(serve())


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
