"""The parts of what the person is shown, as values: text, tables, fields, collapsed
sections; and a `Document` (a title, blocks and notes), what a command shows.

Values know nothing of a front end: display/render.py turns them into the MIME bundles
a notebook, a console or the CLI picks from. Everything in them may come from files:
the renderers escape it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["Block", "Details", "Document", "Fields", "Notice", "Preformatted", "Reply",
           "Table", "Text"]


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Preformatted:
    text: str


@dataclass(frozen=True)
class Fields:
    """Label/value pairs, one per line."""

    items: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Details:
    """A collapsed section (HTML `<details>`); other formats show it under a heading."""

    summary: str
    blocks: tuple[Block, ...]


Block = Text | Preformatted | Fields | Table | Details


class Document(Protocol):
    """A titled list of blocks with notes under it (a command's result is one)."""

    @property
    def title(self) -> str: ...

    @property
    def blocks(self) -> tuple[Block, ...]: ...

    @property
    def notices(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class Notice:
    """A small remark for the person. Spans in backticks are code (a command, a path)."""

    text: str


@dataclass(frozen=True)
class Reply:
    """A model's answer (Markdown), and a quiet one-line footer under it (None: none)."""

    markdown: str
    footer: str | None = None
