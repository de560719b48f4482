"""What a tool call returned, as the person sees it under the call's notice: the
arguments it ran with and its result, a few lines shown and the rest collapsed (an HTML
`<details>`; plain text shows the head and how many lines follow).

Tools that show their own run (code, its outputs, how it ended: `python`, `shell`,
skill scripts) and Lily's own skill selection have no such view; every other tool has
it, an MCP server's included. The result is the text the model reads (capped there);
the cell's redactor masks credentials in it as in every output.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lily_kernel.display.blocks import Block, Details, Preformatted, Text

__all__ = ["HEAD_LINES", "ToolReturned", "tool_returned"]

HEAD_LINES = 6  # the lines of a result shown before the rest is collapsed
MAX_SHOWN_CHARS = 20_000  # of a result, in the collapsed part too
MAX_ARGUMENTS_CHARS = 500


@dataclass(frozen=True)
class ToolReturned:
    """A call's arguments and what it returned (a Document, shown without a title)."""

    blocks: tuple[Block, ...]
    title: str = ""
    notices: tuple[str, ...] = ()


def _arguments(arguments: dict[str, Any]) -> str:
    text = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    if len(text) > MAX_ARGUMENTS_CHARS:
        text = f"{text[:MAX_ARGUMENTS_CHARS]}… ({len(text):,} characters)"
    return text


def tool_returned(arguments: dict[str, Any], text: str) -> ToolReturned:
    """The view of a call that ran with `arguments` and returned `text`."""
    blocks: list[Block] = []
    if arguments:
        blocks.append(Text(f"Called with `{_arguments(arguments)}`, returned:"))
    else:
        blocks.append(Text("Returned:"))
    shown = text[:MAX_SHOWN_CHARS]
    lines = shown.splitlines() or ["(nothing)"]
    blocks.append(Preformatted("\n".join(lines[:HEAD_LINES])))
    rest = lines[HEAD_LINES:]
    if rest:
        cut = (f"\n[... {len(text) - MAX_SHOWN_CHARS:,} more characters not shown]"
               if len(text) > MAX_SHOWN_CHARS else "")
        blocks.append(Details(f"… {len(rest):,} more line{'s' if len(rest) != 1 else ''}",
                              (Preformatted("\n".join(rest) + cut),)))
    return ToolReturned(tuple(blocks))
