"""jupyter_client's client to a sandboxed kernel and its channels, read within bounds: a
message that is not the protocol's is skipped instead of raised, and an iopub message's
content is read only when asked (an output past a run's cap is counted, never decoded).

jupyter_client's loop (`execute_interactive`, `wait_for_ready`, replies by request) runs
over these channels unchanged: `IopubChannel` hands it each message with its type, its
parent request and, for a status, its state, and keeps the ZeroMQ frames beside them
(`frames_of`) for execution/run_outputs.py. Every message is checked against the session's
key (HMAC) as jupyter_client's Session checks it; one that fails comes as a blank message
no request claims.

The sockets come from the bounded context (execution/kernel_link.py): one message queued,
each part at most MAX_MESSAGE_BYTES. A larger part makes ZeroMQ drop the connection; the
iopub channel's monitor tells (`disconnected`), and the client connects a new channel
(which also drops whatever the kernel still queued for the old one).

This module imports jupyter_client: it is loaded with the first kernel, not with Lily.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass
from hmac import compare_digest
from typing import TYPE_CHECKING, Any

import zmq
import zmq.asyncio
from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from traitlets import Type

if TYPE_CHECKING:
    from jupyter_client.session import Session

__all__ = ["BoundedClient", "CheckedChannel", "IopubChannel", "Message", "frames_of"]

# A header, parent header or status larger than this is not the kernel's protocol: such a
# message is taken for nothing (counted when it is an output).
_SMALL = 65536


def _small_json(frame: Any) -> dict[str, Any]:
    """A small JSON object frame, decoded; {} when it is large or not one."""
    if len(frame) > _SMALL:
        return {}
    try:
        value = json.loads(frame.bytes)
    except (ValueError, UnicodeDecodeError, RecursionError):  # ([[[... nested past C's)
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

    def decoded(self, client: AsyncKernelClient) -> dict[str, Any]:
        """The whole message, as jupyter_client's Session decodes it (its signature checked
        again, and remembered against a replay)."""
        message: dict[str, Any] = client.session.deserialize(list(self.parts), content=True,
                                                             copy=False)
        return message


def _blank() -> dict[str, Any]:
    """A message no request claims (jupyter_client's loops skip it: its parent is none)."""
    return {"header": {"msg_type": ""}, "parent_header": {}, "msg_type": "", "content": {},
            "metadata": {}}


def _signed(session: Session, parts: list[Any]) -> bool:
    """Whether the message is signed with the session's key: Session.deserialize's check,
    made over the frames as they came (a large content is not copied for it)."""
    if session.auth is None:
        return True
    signature = parts[0].bytes
    return bool(signature) and signature not in session.digest_history \
        and compare_digest(signature, session.sign(parts[1:5]))


def _lazy(frames: list[Any], session: Session) -> dict[str, Any]:
    """An iopub message as jupyter_client's loops read it (type, parent, a status's
    state), its frames beside; the blank message when it is not the protocol's."""
    try:
        _, parts = session.feed_identities(frames, copy=False)
    except ValueError:
        return _blank()
    if len(parts) < 5 or not _signed(session, parts):
        return _blank()
    kind = _small_json(parts[1]).get("msg_type")
    parent = _small_json(parts[2]).get("msg_id")
    message = Message(kind if isinstance(kind, str) else "",
                      parent if isinstance(parent, str) else None, tuple(parts))
    content = {}
    if message.kind == "status":
        state = message.content().get("execution_state")
        content = {"execution_state": state if isinstance(state, str) else ""}
    return {"header": {"msg_type": message.kind}, "msg_type": message.kind,
            "parent_header": {"msg_id": message.parent_id} if message.parent_id else {},
            "content": content, "metadata": {}, "frames": message}


def frames_of(msg: dict[str, Any]) -> Message | None:
    """The frames of a message `IopubChannel` handed on (None for a blank one)."""
    message = msg.get("frames")
    return message if isinstance(message, Message) else None


class CheckedChannel(AsyncZMQSocketChannel):
    """A shell or control channel: a message that is not the protocol's (a bad signature,
    a broken frame) is the blank message instead of an error out of jupyter_client's loop.
    It remembers the last request it sent (`sent`): the one an interrupt ends."""

    sent: str | None = None

    async def _recv(self, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        try:
            message: dict[str, Any] = await super()._recv(**kwargs)
        except (ValueError, TypeError, KeyError, RecursionError):
            message = _blank()
        await asyncio.sleep(0)  # (as IopubChannel's: a flood must not hold the event loop)
        return message

    def send(self, msg: dict[str, Any]) -> None:
        super().send(msg)
        self.sent = msg["header"]["msg_id"]


class IopubChannel(AsyncZMQSocketChannel):
    """The iopub channel: messages read lazily (`_lazy`), when the last came (`received`,
    of any request), and a monitor of its socket that tells when ZeroMQ dropped the
    connection."""

    received = 0.0  # time.monotonic() of the last message read

    def __init__(self, socket: zmq.asyncio.Socket, session: Session, loop: Any = None
                 ) -> None:
        super().__init__(socket, session, loop)
        socket.linger = 0
        self._monitor: zmq.asyncio.Socket | None = socket.get_monitor_socket(
            zmq.EVENT_DISCONNECTED)

    async def _recv(self, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        assert self.socket is not None
        frames = await self.socket.recv_multipart(copy=False)
        self.received = time.monotonic()
        # jupyter_client's loop reads on without yielding while messages are queued: a
        # kernel that keeps the queue full would hold the event loop (the time limit, the
        # stop button, every other cell's work) for as long as it likes.
        await asyncio.sleep(0)
        return _lazy(frames, self.session)

    async def disconnected(self) -> None:
        """Returns once ZeroMQ dropped the connection (a part larger than the context
        takes, or the kernel's end), and with it that message and what followed it."""
        assert self._monitor is not None
        await self._monitor.recv_multipart()  # (only disconnections are asked for)

    def close(self) -> None:
        socket, monitor = self.socket, self._monitor
        self._monitor = None
        if socket is not None:
            with contextlib.suppress(Exception):
                socket.disable_monitor()
        super().close()
        if monitor is not None:
            monitor.close(linger=0)

    stop = close


class BoundedClient(AsyncKernelClient):
    """jupyter_client's async client over the channels above."""

    shell_channel_class = Type(CheckedChannel)
    control_channel_class = Type(CheckedChannel)
    iopub_channel_class = Type(IopubChannel)

    def reset_iopub(self) -> None:
        """A new iopub channel in place of the old one, whose queue the kernel drops."""
        if self._iopub_channel is not None:
            self._iopub_channel.close()
        self._iopub_channel = None
