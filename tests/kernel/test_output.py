"""kernel/output.py's KernelSink: each value a cell shows becomes the iopub message a
notebook shows it with (no kernel started: the messages are collected as sent)."""

from __future__ import annotations

import asyncio
from typing import Any

from lily_kernel.commands import CommandResult
from lily_kernel.display import Code, Notice, Reply, RunOutput, Text, bundle
from lily_kernel.kernel.output import KernelSink


def sink() -> tuple[KernelSink, list[tuple[str, dict[str, Any]]]]:
    sent: list[tuple[str, dict[str, Any]]] = []
    return KernelSink(lambda kind, content: sent.append((kind, content))), sent


def test_a_streamed_answer_is_one_display_updated_in_place_until_its_reply() -> None:
    cell, sent = sink()
    cell.stream("Hel")
    cell.stream("Hello")
    cell.show(Reply("Hello world", "model · 3 tokens"))
    kinds = [kind for kind, _ in sent]
    assert kinds == ["display_data", "update_display_data", "update_display_data"]
    ids = {content["transient"]["display_id"] for _, content in sent}
    assert len(ids) == 1 and ids.pop().startswith("lily-")
    assert sent[0][1]["data"] == bundle(Reply("Hel"))
    assert sent[-1][1]["data"] == bundle(Reply("Hello world", "model · 3 tokens"))
    assert "model · 3 tokens" in sent[-1][1]["data"]["text/plain"]


def test_a_reply_not_streamed_is_a_display_of_its_own_and_each_cell_has_its_id() -> None:
    first, sent = sink()
    first.show(Reply("Hi"))
    second, again = sink()
    second.show(Reply("Hi"))
    assert [k for k, _ in sent] == [k for k, _ in again] == ["display_data"]
    assert sent[0][1]["transient"] != again[0][1]["transient"]


def test_notices_results_and_code_are_displays_of_their_bundles() -> None:
    cell, sent = sink()
    result = CommandResult("skills", "Skills", (Text("none"),))
    for value in (Notice("Skill: `x` (selected by the model)"), result, Code("x = 1")):
        cell.show(value)
    assert [k for k, _ in sent] == ["display_data"] * 3
    assert [c["data"] for _, c in sent] == [
        bundle(Notice("Skill: `x` (selected by the model)")), bundle(result),
        bundle(Code("x = 1"))]
    assert all(c["transient"] == {} and c["metadata"] == {} for _, c in sent)
    assert sent[2][1]["data"]["text/markdown"] == "```python\nx = 1\n```"


def test_a_runs_output_is_its_own_message_made_safe() -> None:
    cell, sent = sink()
    cell.show(RunOutput({"output_type": "stream", "name": "stdout", "text": "1\x1b[2J\n"}))
    cell.show(RunOutput({"output_type": "display_data",
                         "data": {"text/html": "<script>x</script><b>k</b>"}}))
    assert sent[0] == ("stream", {"name": "stdout", "text": "1\n"})
    assert sent[1][0] == "display_data" and "<script" not in sent[1][1]["data"]["text/html"]


def test_no_one_answers_a_silent_cells_question() -> None:
    cell, sent = sink()
    assert asyncio.run(cell.ask("Trust it? [y/N]")) is None and sent == []
