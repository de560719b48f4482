"""Recognise a command cell and split it into name and argument. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ParsedCommand", "parse_command"]

_HEAD = re.compile(r"/(\S*)")


@dataclass(frozen=True)
class ParsedCommand:
    name: str  # without the slash; "" for a lone "/"
    argument: str  # the rest of the cell, first line and following lines, stripped
    raw: str = ""  # the rest of the cell as written (code keeps its indentation)


def parse_command(cell: str) -> ParsedCommand | None:
    """A cell whose first non-blank character is `/` is a command; otherwise None."""
    text = cell.lstrip()
    head = _HEAD.match(text)
    if head is None:
        return None
    rest = text[head.end() :]
    return ParsedCommand(name=head.group(1), argument=rest.strip(), raw=rest)
