"""A command's result is rendered as plain text twice per cell (the digest its event
logs, then the bundle shown): the second time is the first's text, kept only while the
result lives, and only for a frozen result (a value that cannot change)."""

from __future__ import annotations

import gc
from dataclasses import dataclass, field

import pytest

from lily_kernel.commands import CommandResult
from lily_kernel.display import Table, Text
from lily_kernel.display import render as render_module
from lily_kernel.display.render import bundle, render_plain


def _result(rows: int) -> CommandResult:
    table = Table(("name", "summary"), tuple((f"s{i}", f"does {i}") for i in range(rows)))
    return CommandResult("skills", title="Skills", blocks=(Text("All:"), table))


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    calls: list[object] = []
    real = render_module._plain_block

    def counted(block: object, width: int | None = None) -> str:
        calls.append(block)
        return real(block, width)  # type: ignore[arg-type]

    monkeypatch.setattr(render_module, "_plain_block", counted)
    return calls


def test_the_same_result_is_rendered_once_and_its_text_kept_while_it_lives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _counting(monkeypatch)
    result = _result(3)
    first = render_plain(result)
    assert bundle(result)["text/plain"] == first
    assert len(calls) == 2  # its two blocks, once
    assert render_plain(result, width=80) == first
    assert len(calls) == 4  # for a terminal's width: rendered anew
    del result
    gc.collect()
    assert render_module._last_plain[1] == ""  # nothing kept once the result is gone
    again = _result(3)
    assert render_plain(again) == first
    assert len(calls) == 6  # an equal new result: rendered again


@dataclass
class _Mutable:
    title: str
    blocks: tuple[Text, ...]
    notices: tuple[str, ...] = field(default=())


def test_a_result_that_can_change_is_rendered_every_time() -> None:
    doc = _Mutable("T", (Text("one"),))
    assert render_plain(doc) == "T\n\none"
    doc.blocks = (Text("two"),)
    assert render_plain(doc) == "T\n\ntwo"
