"""What a Python run keeps of its outputs (execution/run_outputs.py): up to the cap,
decoded and passed on; past it, counted by size and never decoded whole (a stream's head
aside). Messages are made by jupyter_client's Session, as the kernel sends them."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import zmq
from jupyter_client.session import Session

from lily_kernel.execution.iopub import Message
from lily_kernel.execution.run_outputs import RunOutputs

SESSION = Session(key=b"test-key")
CLIENT: Any = SimpleNamespace(session=SESSION)
PARENT = SESSION.msg("execute_request", {})


def _message(kind: str, content: dict[str, Any] | None = None, raw: bytes | None = None
             ) -> Message:
    """An iopub message as received; `raw`: its content frame as sent (JSON or not)."""
    frames = SESSION.serialize(SESSION.msg(kind, content or {}, parent=PARENT))
    if raw is not None:
        frames[-1] = raw
    parts = [zmq.Frame(f) for f in frames]
    _, rest = SESSION.feed_identities(parts, copy=False)
    return Message(kind, PARENT["header"]["msg_id"], tuple(rest))


def _outputs(keep: int) -> tuple[RunOutputs, list[dict[str, Any]]]:
    shown: list[dict[str, Any]] = []
    return RunOutputs(keep, shown.append), shown


def test_outputs_within_the_cap_are_kept_in_order_and_passed_on() -> None:
    outputs, shown = _outputs(10_000)
    outputs.add(_message("stream", {"name": "stdout", "text": "hello\n"}), CLIENT)
    outputs.add(_message("display_data", {"data": {"text/plain": "42"}, "metadata": {}}),
                CLIENT)
    outputs.add(_message("error", {"ename": "ValueError", "evalue": "bad",
                                   "traceback": []}), CLIENT)
    assert [o["output_type"] for o in shown] == ["stream", "display_data", "error"]
    assert outputs.kept == shown and outputs.dropped == 0
    assert outputs.error == "ValueError: bad"
    assert outputs.total == sum(len(json.dumps(o, sort_keys=True)) for o in shown)
    assert len(outputs.sha256) == 64


def test_a_huge_print_keeps_its_head_without_decoding_the_rest() -> None:
    """Its content is not JSON past the head: decoded whole, it would fail."""
    outputs, shown = _outputs(1_000)
    head = b'{"name": "stderr", "text": "' + "é\\n".encode() * 100 + b"b" * 5_000_000
    outputs.add(_message("stream", raw=head + b"\xff not json"), CLIENT)
    assert len(shown) == 1 and shown[0]["name"] == "stderr"
    assert shown[0]["text"].startswith("é\né\n") and len(shown[0]["text"]) <= 1_000
    assert outputs.dropped == 1 and outputs.total > 5_000_000


def test_past_the_cap_outputs_are_counted_not_decoded() -> None:
    outputs, shown = _outputs(100)
    outputs.add(_message("stream", {"name": "stdout", "text": "x" * 20}), CLIENT)
    before = outputs.sha256
    for _ in range(3):  # not JSON at all: never decoded, only counted
        outputs.add(_message("display_data", raw=b"\x00" * 1_000_000), CLIENT)
    assert len(shown) == 1 and outputs.dropped == 3
    assert outputs.total > 3_000_000
    assert outputs.sha256 == before  # the digest covers what was kept
