"""A minimal Jupyter client over a server's kernel websocket (`/api/kernels/<id>/channels`).

Speaks the JSON form of the messaging protocol that Jupyter Server and Kernel Gateway
relay: each message carries its `channel`. Enough to execute cells and collect what
they print; every wait is bounded.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Self

import websocket

__all__ = ["KernelSocket", "WsExecution"]


@dataclass
class WsExecution:
    """One cell run over the websocket: its execute_reply and iopub messages."""

    msg_id: str
    reply: dict[str, Any] | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)
    idle: bool = False

    def of_type(self, msg_type: str) -> list[dict[str, Any]]:
        return [m["content"] for m in self.outputs if m["msg_type"] == msg_type]

    @property
    def plain(self) -> str:
        return "\n".join(c["data"].get("text/plain", "")
                         for c in self.of_type("display_data"))


class KernelSocket:
    """`with KernelSocket(url, token) as ks:`; `ks.execute(code)` runs a cell."""

    def __init__(self, ws_url: str, token: str, timeout: float = 60) -> None:
        self.session = uuid.uuid4().hex
        self.timeout = timeout
        self.ws = websocket.create_connection(
            ws_url, header=[f"Authorization: token {token}"], timeout=timeout)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.ws.close()

    def send(self, channel: str, msg_type: str, content: dict[str, Any]) -> str:
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": msg_type, "session": self.session,
                       "username": "test", "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "content": content,
            "channel": channel, "buffers": []}))
        return msg_id

    def start(self, code: str) -> WsExecution:
        """Send an execute_request; collect its messages with `wait` or `collect_until`."""
        msg_id = self.send("shell", "execute_request", {
            "code": code, "silent": False, "store_history": True,
            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
        return WsExecution(msg_id)

    def _receive(self, run: WsExecution, deadline: float) -> None:
        self.ws.settimeout(max(0.1, deadline - time.monotonic()))
        msg = json.loads(self.ws.recv())
        if msg.get("parent_header", {}).get("msg_id") != run.msg_id:
            return
        if msg["channel"] == "shell" and msg["msg_type"] == "execute_reply":
            run.reply = msg["content"]
        elif msg["channel"] == "iopub":
            if msg["msg_type"] == "status":
                run.idle = msg["content"]["execution_state"] == "idle"
            elif msg["msg_type"] != "execute_input":
                run.outputs.append(msg)

    def collect_until(self, run: WsExecution, done: Any, timeout: float | None = None) -> None:
        """Receive messages until `done(run)` is true; TimeoutError after `timeout`."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while not done(run):
            if time.monotonic() > deadline:
                raise TimeoutError(f"cell {run.msg_id} not done: {run.outputs!r}")
            try:
                self._receive(run, deadline)
            except websocket.WebSocketTimeoutException:
                continue

    def wait(self, run: WsExecution, timeout: float | None = None) -> WsExecution:
        """Until the execute_reply and the kernel's return to idle."""
        self.collect_until(run, lambda r: r.reply is not None and r.idle, timeout)
        return run

    def execute(self, code: str, timeout: float | None = None) -> WsExecution:
        return self.wait(self.start(code), timeout)
