"""Questions to the person through Jupyter's stdin channel (`input_request`), awaitable.

ipykernel's own `raw_input` blocks the event loop until the answer arrives, so the stop
button could not cancel a cell waiting on it; this sends the same `input_request` and
polls for the `input_reply` between awaits. The base `Kernel` does not record whether
the frontend accepts input requests (IPython's kernel does, in `_forward_input`):
`LilyKernel.do_execute` records `allow_stdin`, and where it is false (nbclient,
papermill) no request is sent and the answer is None.
"""

from __future__ import annotations

import asyncio
from typing import Any

import zmq

__all__ = ["POLL_SECONDS", "request_input"]

POLL_SECONDS = 0.02


def _parent_ident(kernel: Any) -> Any:
    getter = getattr(kernel, "_get_shell_context_var", None)
    if getter is not None:
        return getter(kernel._shell_parent_ident)
    return kernel._parent_ident["shell"]  # older ipykernel


async def request_input(kernel: Any, prompt: str) -> str | None:
    """The person's answer to `prompt`, or None when this request cannot ask."""
    if not getattr(kernel, "_allow_stdin", False) or kernel.stdin_socket is None:
        return None
    socket, session = kernel.stdin_socket, kernel.session
    while True:  # drop stale replies (e.g. to a request an interrupt abandoned)
        try:
            socket.recv_multipart(zmq.NOBLOCK)
        except zmq.ZMQError as exc:
            if exc.errno == zmq.EAGAIN:
                break
            raise
    session.send(socket, "input_request", {"prompt": prompt, "password": False},
                 kernel.get_parent("shell"), ident=_parent_ident(kernel))
    while True:
        _ident, reply = session.recv(socket, zmq.NOBLOCK)
        if reply is not None:
            break
        await asyncio.sleep(POLL_SECONDS)  # a cancellation (stop button) lands here
    try:
        value = reply["content"]["value"]
    except (KeyError, TypeError):
        return ""
    return None if value == "\x04" else str(value)  # \x04: end of input
