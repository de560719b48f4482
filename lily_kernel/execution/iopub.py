"""The kernel's iopub socket, read within bounds: each message's header first (small, and
all a message past a run's cap is read for), its content only when asked.

The socket comes from the bounded context (execution/kernel_link.py): one message queued,
each part at most MAX_MESSAGE_BYTES. A larger part makes ZeroMQ drop the connection; that
is seen here (a monitor of the socket) and raised as `IopubLostError`, and `reset` connects a
new socket (which also drops whatever the kernel still queued for the old one).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import zmq.asyncio
    from jupyter_client.asynchronous.client import AsyncKernelClient

__all__ = ["Iopub", "IopubLostError", "Message"]

# A header, parent header or status larger than this is not the kernel's protocol: such a
# message is taken for nothing (counted when it is an output).
_SMALL = 65536


class IopubLostError(Exception):
    """The kernel sent a message part larger than Lily takes: ZeroMQ dropped the
    connection, and with it that message and what followed it."""


def _small_json(frame: Any) -> dict[str, Any]:
    """A small JSON object frame, decoded; {} when it is large or not one."""
    if len(frame) > _SMALL:
        return {}
    try:
        value = json.loads(frame.bytes)
    except (ValueError, UnicodeDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class Message:
    """One iopub message as received: its type and parent request read, the rest kept as
    ZeroMQ frames (not copied, not decoded)."""

    kind: str
    parent_id: str | None
    parts: tuple[Any, ...]  # signature, header, parent header, metadata, content, buffers

    @property
    def size(self) -> int:
        """Its metadata, content and buffers, in bytes."""
        return sum(len(part) for part in self.parts[3:])

    @property
    def content_frame(self) -> memoryview:
        return memoryview(self.parts[4].buffer)

    def content(self) -> dict[str, Any]:
        """Its content, when small (a status, an error's name); else {}."""
        return _small_json(self.parts[4])

    def state(self) -> str | None:
        """A status message's execution state (busy, idle)."""
        value = self.content().get("execution_state")
        return value if isinstance(value, str) else None

    def decoded(self, client: AsyncKernelClient) -> dict[str, Any]:
        """The whole message, its signature checked (jupyter_client's Session)."""
        message: dict[str, Any] = client.session.deserialize(list(self.parts), content=True,
                                                             copy=False)
        return message


def _parse(frames: list[Any], client: AsyncKernelClient) -> Message | None:
    try:
        _, parts = client.session.feed_identities(frames, copy=False)
    except ValueError:
        return None
    if len(parts) < 5:
        return None
    kind = _small_json(parts[1]).get("msg_type")
    parent = _small_json(parts[2]).get("msg_id")
    return Message(kind if isinstance(kind, str) else "",
                   parent if isinstance(parent, str) else None, tuple(parts))


class Iopub:
    """The kernel's iopub socket (a SUB socket of `client`'s, whose context bounds it)
    and a monitor that tells when ZeroMQ dropped its connection."""

    def __init__(self, client: AsyncKernelClient) -> None:
        self._client = client
        self._socket: zmq.asyncio.Socket | None = None
        self._monitor: zmq.asyncio.Socket | None = None
        self.reset()

    def reset(self) -> None:
        """A new socket in place of the old one, whose queue the kernel drops."""
        import zmq

        self.close()
        # (sockets of the client's asyncio context are asyncio sockets)
        socket = cast("zmq.asyncio.Socket", self._client.connect_iopub())
        socket.linger = 0
        self._monitor = socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        self._socket = socket

    async def next(self, timeout: float) -> Message | None:
        """The next message (a message that is not the protocol's is skipped), or None
        when none came within `timeout` seconds. Raises IopubLostError."""
        import zmq
        import zmq.asyncio

        socket, monitor = self._socket, self._monitor
        assert socket is not None and monitor is not None
        poller = zmq.asyncio.Poller()
        poller.register(socket, zmq.POLLIN)
        poller.register(monitor, zmq.POLLIN)
        ready = dict(await poller.poll(max(timeout, 0.0) * 1000))
        if socket in ready:
            return _parse(await socket.recv_multipart(copy=False), self._client)
        if monitor in ready:
            await monitor.recv_multipart()  # (only disconnections are asked for)
            raise IopubLostError
        return None

    def close(self) -> None:
        socket, monitor = self._socket, self._monitor
        self._socket = self._monitor = None
        if socket is not None:
            with contextlib.suppress(Exception):
                socket.disable_monitor()
            socket.close(linger=0)
        if monitor is not None:
            monitor.close(linger=0)
