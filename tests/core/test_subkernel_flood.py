"""A kernel that keeps iopub busy with messages that are no output (a widget's comm
messages, messages of another request) must still be stopped at the run's time limit:
jupyter_client's loop raises its TimeoutError only after a poll in silence, so the limit
is Subkernel's to keep (it was, before the loop moved to execute_interactive). Against a
kernel scripted in a thread of its own, on real ZeroMQ sockets, in process."""

from __future__ import annotations

import asyncio
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import cast

import pytest
import zmq
import zmq.asyncio
from jupyter_client.session import Session

from lily_kernel.execution import subkernel
from lily_kernel.execution.iopub import BoundedClient
from lily_kernel.execution.kernelspec import KernelChoice
from lily_kernel.execution.subkernel import Subkernel

KEY = b"the-session-key"


def _flood(prefix: str, stop: threading.Event, ready: threading.Event) -> None:
    """A kernel's shell and iopub: until `stop`, 'starting' statuses; once an execute
    request comes, its busy status, then comm messages of it as fast as it can (the same
    frames again: signed once), for at most 15 s (a host that never stops it would hang
    its event loop for good)."""
    context = zmq.Context()
    session = Session(key=KEY)
    shell = context.socket(zmq.ROUTER)
    shell.bind(f"ipc://{prefix}-1")
    iopub = context.socket(zmq.PUB)
    iopub.bind(f"ipc://{prefix}-2")
    ready.set()
    try:
        request, until = None, time.monotonic() + 15
        comm: list[bytes] | None = None
        while not stop.is_set() and time.monotonic() < until:
            if request is None:
                if shell.poll(10):
                    _, rest = session.feed_identities(shell.recv_multipart())
                    request = session.deserialize(rest)
                    session.send(iopub, "status", {"execution_state": "busy"},
                                 parent=request)
                    comm = session.serialize(session.msg(
                        "comm_msg", {"comm_id": "c", "data": {}}, parent=request))
                else:
                    session.send(iopub, "status", {"execution_state": "starting"})
                continue
            iopub.send_multipart(comm or [])
    finally:
        shell.close(linger=0)
        iopub.close(linger=0)
        context.term()


async def _flooded(folder: Path) -> tuple[str, float]:
    prefix = str(folder / "k")
    stop, ready = threading.Event(), threading.Event()
    thread = threading.Thread(target=_flood, args=(prefix, stop, ready), daemon=True)
    thread.start()
    ready.wait(10)
    context = zmq.asyncio.Context()
    client = BoundedClient(context=context)
    client.load_connection_info({"transport": "ipc", "ip": prefix, "shell_port": 1,
                                 "iopub_port": 2, "stdin_port": 3, "control_port": 4,
                                 "hb_port": 5, "key": KEY.decode(),
                                 "signature_scheme": "hmac-sha256"})
    client.start_channels(shell=True, iopub=True, stdin=False, hb=False, control=False)
    process = subprocess.Popen(["sleep", "60"], start_new_session=True)
    runner = Subkernel(cast(KernelChoice, None), lambda c: c, folder, {},
                       folder / "private")
    runner._process, runner._client = process, client
    try:
        while True:  # the subscription holds
            try:
                await client.iopub_channel.get_msg(timeout=0.05)
                break
            except queue.Empty:
                continue
        began = time.monotonic()
        reply = await asyncio.wait_for(
            runner.execute("x", lambda _: None, timeout=1.0, keep_bytes=1000,
                           limit_bytes=10_000), 20)
        return reply.status, time.monotonic() - began
    finally:
        stop.set()
        thread.join(10)
        runner.kill()
        context.destroy(linger=0)


def test_a_flood_of_non_outputs_is_stopped_at_the_time_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subkernel, "SETTLE_SECONDS", 0.5)
    status, took = asyncio.run(_flooded(tmp_path))
    assert status == "timeout"
    assert took < 10
