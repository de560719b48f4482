"""What one run of the session's Python keeps of its outputs: those that fit in the cap,
as nbformat writes them, passed on as they come; the rest counted, never decoded whole.

Up to `keep_bytes` an output is decoded, kept and digested (the run's `output_sha256`
covers what was kept). A stream past it keeps its head (one huge print says something):
only that head is decoded. Past the cap an output is counted by its size and nothing
else; the run's limit (`limit_bytes`, the whole output) is the caller's to enforce.
`RunReply`: how the run ended, as facts (prompting/runs.py words them for the model).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from jupyter_client.asynchronous.client import AsyncKernelClient

    from lily_kernel.execution.iopub import Message

__all__ = ["OUTPUT_MESSAGES", "RunOutputs", "RunReply", "Status"]

# The iopub messages that are outputs (an update of a display is shown as a new one).
OUTPUT_MESSAGES = ("stream", "display_data", "execute_result", "error", "update_display_data")
Status = Literal["ok", "error", "timeout", "interrupted", "output_limit"]
_TEXT = re.compile(rb'"text"\s*:\s*"')
_NAME = re.compile(rb'"name"\s*:\s*"(stdout|stderr)"')
_MISSING = re.compile(r"No module named '([A-Za-z0-9_.]+)'")


def _output(msg: dict[str, Any]) -> dict[str, Any]:
    from nbformat.v4 import output_from_msg

    if msg["header"]["msg_type"] == "update_display_data":
        msg = {**msg, "header": {**msg["header"], "msg_type": "display_data"}}
    return dict(output_from_msg(msg))  # type: ignore[no-untyped-call]


def _stream_head(content: memoryview, room: int) -> dict[str, Any] | None:
    """The first characters (about `room` bytes of JSON) of a stream's text, read from
    the start of its content without decoding the rest; None when it does not start as
    a stream's content does."""
    prefix = bytes(content[: room + 256])
    text = _TEXT.search(prefix)
    if text is None:
        return None
    name = _NAME.search(prefix, 0, text.start())
    body = prefix[text.end():]
    for cut in range(13):  # an escape or a UTF-8 character may be cut at the end
        try:
            head = json.loads(b'"' + body[: len(body) - cut] + b'"')
        except ValueError:
            continue
        return {"output_type": "stream", "name": name[1].decode() if name else "stdout",
                "text": head[:room]}
    return None


@dataclass
class RunOutputs:
    """The outputs of one run so far: kept (and passed to `on_output`), counted, digested."""

    keep_bytes: int
    on_output: Callable[[dict[str, Any]], None]
    kept: list[dict[str, Any]] = field(default_factory=list)
    total: int = 0  # every output's size, kept or not
    dropped: int = 0  # outputs not kept (or kept only in part)
    error: str | None = None  # the name and value of the error it showed
    _digest: Any = field(default_factory=hashlib.sha256)

    @property
    def sha256(self) -> str:
        return str(self._digest.hexdigest())

    def add(self, message: Message, client: AsyncKernelClient) -> None:
        room = self.keep_bytes - self.total
        if room > 0 and message.size <= room:
            try:
                output = _output(message.decoded(client))
            except (ValueError, KeyError, TypeError, RecursionError):  # not the protocol's
                self.total += message.size
                self.dropped += 1
                return
            self._decoded(output)
            return
        self.total += message.size
        self.dropped += 1
        if room > 0 and message.kind == "stream":
            head = _stream_head(message.content_frame, room)
            if head is not None:
                self._keep(head)
        elif message.kind == "error" and message.size <= 65536:  # its name, for the status
            content = message.content()
            self.error = f"{content.get('ename', '')}: {content.get('evalue', '')}"

    def _decoded(self, output: dict[str, Any]) -> None:
        data = json.dumps(output, sort_keys=True).encode()
        room = self.keep_bytes - self.total
        self.total += len(data)
        if output.get("output_type") == "error":
            self.error = f"{output.get('ename', '')}: {output.get('evalue', '')}"
        if len(data) <= room:
            self._keep(output)
            return
        self.dropped += 1
        if output.get("output_type") == "stream" and room > 0:
            self._keep({**output, "text": str(output.get("text", ""))[:room]})

    def _keep(self, output: dict[str, Any]) -> None:
        self._digest.update(json.dumps(output, sort_keys=True).encode())
        self.kept.append(output)
        self.on_output(output)


@dataclass(frozen=True)
class RunReply:
    """How one execution ended: its status, its outputs as nbformat writes them (kept up
    to the host's cap), the error's name and value, how long it took, the digest of what
    was kept and the size of everything it output; whether the kernel was ended (it did
    not stop when interrupted: its variables are gone); the limits it ran under. Facts
    only: prompting/runs.py words them for the model."""

    status: Status
    outputs: tuple[dict[str, Any], ...]
    error: str | None
    duration_ms: float
    output_sha256: str
    output_bytes: int
    dropped: int = 0  # outputs past the cap: counted, not kept or passed on
    kernel_ended: bool = False
    timeout: float = 0.0  # the time limit it ran under, in seconds
    limit_bytes: int = 0  # the output it was allowed at most (past it: `output_limit`)

    @property
    def error_name(self) -> str | None:
        """The error's class name (`ModuleNotFoundError`), when the run raised one."""
        return self.error.split(":", 1)[0].strip() or None if self.error else None

    @property
    def missing_module(self) -> str | None:
        """The top-level module an import did not find (`polars` of `polars.io`), when
        the run failed for that."""
        if self.error_name != "ModuleNotFoundError" or self.error is None:
            return None
        found = _MISSING.search(self.error)
        return found[1].split(".")[0] if found else None
