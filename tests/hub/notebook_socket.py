"""A kernel websocket client that sends cells as JupyterLab does: each execute request
carries its cell's id (`metadata.cellId`) and allows stdin, and every question the
kernel asks (`input_request`) is answered, and kept, as a person would type it."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from tests.support.kernel_ws import KernelSocket, WsExecution

__all__ = ["NotebookSocket", "text_of"]


class NotebookSocket(KernelSocket):
    """`with NotebookSocket(url, token, answer="y") as ks:`; `ks.cell(code, cell_id)`."""

    def __init__(self, ws_url: str, token: str, answer: str = "y",
                 timeout: float = 60) -> None:
        super().__init__(ws_url, token, timeout)
        self.answer = answer
        self.questions: list[str] = []

    def _message(self, channel: str, msg_type: str, content: dict[str, Any],
                 metadata: dict[str, Any], parent: dict[str, Any]) -> str:
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": msg_type, "session": self.session,
                       "username": "person", "version": "5.3", "date": ""},
            "parent_header": parent, "metadata": metadata, "content": content,
            "channel": channel, "buffers": []}))
        return msg_id

    def cell(self, code: str, cell_id: str, timeout: float | None = None) -> WsExecution:
        """Run one notebook cell and wait for its reply and the kernel's idle."""
        msg_id = self._message("shell", "execute_request", {
            "code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": True, "stop_on_error": True}, {"cellId": cell_id}, {})
        return self.wait(WsExecution(msg_id), timeout)

    def _receive(self, run: WsExecution, deadline: float) -> None:
        self.ws.settimeout(max(0.1, deadline - time.monotonic()))
        msg = json.loads(self.ws.recv())
        if msg.get("parent_header", {}).get("msg_id") != run.msg_id:
            return
        if msg["channel"] == "stdin" and msg["msg_type"] == "input_request":
            self.questions.append(msg["content"]["prompt"])
            self._message("stdin", "input_reply", {"value": self.answer}, {},
                          msg["header"])
        elif msg["channel"] == "shell" and msg["msg_type"] == "execute_reply":
            run.reply = msg["content"]
        elif msg["channel"] == "iopub":
            if msg["msg_type"] == "status":
                run.idle = msg["content"]["execution_state"] == "idle"
            elif msg["msg_type"] != "execute_input":
                run.outputs.append(msg)


def text_of(run: WsExecution) -> str:
    """Everything a cell showed, as plain text: streams, displays and results."""
    parts = []
    for msg in run.outputs:
        content = msg["content"]
        if msg["msg_type"] == "stream":
            parts.append(content["text"])
        elif msg["msg_type"] in ("display_data", "update_display_data", "execute_result"):
            parts.append(content["data"].get("text/plain", ""))
        elif msg["msg_type"] == "error":
            parts.append(f"{content['ename']}: {content['evalue']}")
    return "\n".join(parts)
