"""jupyter_client's client over Lily's bounded channels (execution/iopub.py), against a
scripted kernel on real ZeroMQ sockets (IPC, in the test's folder) that signs as a
kernel does (jupyter_client's Session): `execute_interactive` runs over them unchanged,
a message not signed with the session's key never reaches the run, an output's content
is not decoded by the channel, and a part past the context's limit drops the connection
and the monitor says so."""

from __future__ import annotations

import asyncio
import queue
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import zmq
import zmq.asyncio
from jupyter_client.session import Session

from lily_kernel.execution.iopub import BoundedClient, frames_of

KEY = b"the-session-key"


class ScriptedKernel:
    """A kernel's shell (ROUTER) and iopub (PUB) sockets, bound in `folder`, answering
    execute requests with what `script` publishes."""

    def __init__(self, folder: Path, context: zmq.asyncio.Context) -> None:
        self.session = Session(key=KEY)
        self.prefix = str(folder / "k")
        self.shell = context.socket(zmq.ROUTER)
        self.shell.bind(f"ipc://{self.prefix}-1")
        self.iopub = context.socket(zmq.PUB)
        self.iopub.bind(f"ipc://{self.prefix}-2")

    def publish(self, kind: str, content: dict[str, Any], parent: dict[str, Any] | None,
                key: bytes = KEY) -> None:
        Session(key=key).send(self.iopub, kind, content, parent=parent)

    async def answer(self, outputs: list[tuple[str, dict[str, Any], bytes]]) -> None:
        """Take one execute request; publish busy, `outputs` (kind, content, key), idle;
        reply ok."""
        frames = await self.shell.recv_multipart()
        identities, rest = self.session.feed_identities(frames)
        request = self.session.deserialize(rest)
        self.publish("status", {"execution_state": "busy"}, request)
        for kind, content, key in outputs:
            self.publish(kind, content, request, key)
        self.publish("status", {"execution_state": "idle"}, request)
        self.session.send(self.shell, "execute_reply", {"status": "ok"}, parent=request,
                          ident=identities)

    def close(self) -> None:
        self.shell.close(linger=0)
        self.iopub.close(linger=0)


@asynccontextmanager
async def paired(folder: Path) -> AsyncIterator[tuple[ScriptedKernel, BoundedClient]]:
    """A scripted kernel and Lily's client to it, its iopub subscription holding."""
    context = zmq.asyncio.Context()
    kernel = ScriptedKernel(folder, context)
    client = BoundedClient(context=context)
    client.load_connection_info({"transport": "ipc", "ip": kernel.prefix, "shell_port": 1,
                                 "iopub_port": 2, "stdin_port": 3, "control_port": 4,
                                 "hb_port": 5, "key": KEY.decode(),
                                 "signature_scheme": "hmac-sha256"})
    client.start_channels(shell=True, iopub=True, stdin=False, hb=False, control=False)
    try:
        # The subscription holds once a message published now arrives (PUB drops the
        # rest); what else came is read away.
        while True:
            kernel.publish("status", {"execution_state": "starting"}, None)
            try:
                await client.iopub_channel.get_msg(timeout=0.05)
                break
            except queue.Empty:
                continue
        while await client.iopub_channel.msg_ready():
            await client.iopub_channel.get_msg(timeout=0)
        yield kernel, client
    finally:
        client.stop_channels()
        kernel.close()
        context.destroy(linger=0)


async def _run(kernel: ScriptedKernel, client: BoundedClient,
               outputs: list[tuple[str, dict[str, Any], bytes]]
               ) -> tuple[list[Any], dict[str, Any]]:
    seen: list[Any] = []
    answering = asyncio.ensure_future(kernel.answer(outputs))
    reply = await client.execute_interactive("x", allow_stdin=False, timeout=10,
                                             output_hook=seen.append)
    await answering
    return seen, reply


def test_execute_interactive_runs_over_the_channels_and_skips_forgeries(
        tmp_path: Path) -> None:
    asyncio.run(_forgeries_skipped(tmp_path))


async def _forgeries_skipped(folder: Path) -> None:
    async with paired(folder) as (kernel, client):
        stream = {"name": "stdout", "text": "hello\n"}
        seen, reply = await _run(kernel, client, [
            ("stream", {"name": "stdout", "text": "forged\n"}, b"not-the-key"),
            ("stream", stream, KEY)])
        assert reply["content"]["status"] == "ok"
        assert [m["msg_type"] for m in seen] == ["status", "stream", "status"]
        message = frames_of(seen[1])
        assert message is not None and message.kind == "stream"
        assert message.decoded(client)["content"] == stream  # its signature checked again
        assert seen[2]["content"] == {"execution_state": "idle"}


def test_an_outputs_content_is_not_decoded_by_the_channel(tmp_path: Path) -> None:
    """The channel reads the header and parent only: a content that is no JSON at all
    (as a huge output's is, for a reader that would decode it) still comes, as frames."""
    asyncio.run(_undecoded(tmp_path))


async def _undecoded(folder: Path) -> None:
    async with paired(folder) as (kernel, client):
        answering = asyncio.ensure_future(kernel.shell.recv_multipart())
        sent = client.execute("x")
        await answering
        parent = {"header": {"msg_id": sent, "msg_type": "execute_request", "session": "s",
                             "username": "u", "date": "", "version": "5.3"}}
        frames = kernel.session.serialize(kernel.session.msg("stream", {}, parent=parent))
        # (the delimiter, the signature, header, parent, metadata, content)
        frames[5] = b"\xff not json " * 1000
        frames[1] = kernel.session.sign(frames[2:6])  # signed as sent, whatever it holds
        await kernel.iopub.send_multipart(frames)
        msg = await client.iopub_channel.get_msg(timeout=5)
        message = frames_of(msg)
        assert msg["parent_header"]["msg_id"] == sent and message is not None
        assert message.size > 10_000 and message.content() == {}
        with pytest.raises(ValueError):
            message.decoded(client)


def test_a_replayed_message_is_a_blank_no_request_claims(tmp_path: Path) -> None:
    asyncio.run(_replayed(tmp_path))


async def _replayed(folder: Path) -> None:
    async with paired(folder) as (kernel, client):
        frames = kernel.session.serialize(kernel.session.msg("status", {"execution_state": "idle"}))
        for _ in range(2):
            await kernel.iopub.send_multipart(frames)
        first = await client.iopub_channel.get_msg(timeout=5)
        message = frames_of(first)
        assert message is not None
        message.decoded(client)  # decoded once: its signature is remembered
        second = await client.iopub_channel.get_msg(timeout=5)
        assert frames_of(second) is None and second["parent_header"] == {}


def test_a_part_past_the_contexts_limit_drops_the_connection_and_the_monitor_tells(
        tmp_path: Path) -> None:
    asyncio.run(_dropped(tmp_path))


async def _dropped(tmp_path: Path) -> None:
    context = zmq.asyncio.Context()
    context.setsockopt(zmq.MAXMSGSIZE, 1000)  # as bounded_context() does, smaller
    kernel = ScriptedKernel(tmp_path, context)
    client = BoundedClient(context=context)
    client.load_connection_info({"transport": "ipc", "ip": kernel.prefix, "iopub_port": 2,
                                 "key": KEY.decode(), "signature_scheme": "hmac-sha256"})
    try:
        channel = client.iopub_channel
        lost = asyncio.ensure_future(channel.disconnected())
        while not lost.done():  # (published until the subscription holds)
            kernel.publish("stream", {"name": "stdout", "text": "x" * 5000}, None)
            await asyncio.wait({lost}, timeout=0.05)
        assert not await channel.msg_ready()  # the large message never came
        client.reset_iopub()
        assert client.iopub_channel is not channel and channel.socket is None
    finally:
        client.stop_channels()
        kernel.close()
        context.destroy(linger=0)

