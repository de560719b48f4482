"""Structured command results: a title and blocks, rendered later to HTML/Markdown/text."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "Block",
    "CommandResult",
    "Details",
    "Fields",
    "Preformatted",
    "SkillInvocation",
    "Table",
    "Text",
    "ToolDispatch",
]


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


@dataclass(frozen=True)
class SkillInvocation:
    """A command's intent for the runtime: answer `request` with the skill forced (a
    prompt_rewrite invocation). The runtime builds the model request, not the command."""

    skill: str
    request: str


@dataclass(frozen=True)
class ToolDispatch:
    """A command's intent for the runtime: run the `tool_dispatch` skill's tool with the
    person's request as its text argument (no model); the runtime's tool gate runs it."""

    skill: str
    tool: str
    arguments: dict[str, str]


@dataclass(frozen=True)
class CommandResult:
    """What a command produced. `error` set means it failed and changed nothing."""

    command: str
    title: str = ""
    blocks: tuple[Block, ...] = ()
    error: str | None = None
    invocation: SkillInvocation | None = None
    dispatch: ToolDispatch | None = None
    skill: str | None = None
    notices: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.error is None
