"""The tool registry: named tools, each with an argument dataclass and a handler.

A tool's arguments are described once, as a frozen dataclass whose attribute docstrings
are the descriptions the model reads. Every call is validated against it with plain
code (`validation.build`); the JSON schema offered to the model is made from it by
pydantic, imported only then (the conversation path), never at kernel start.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lily_kernel.validation import build

__all__ = ["ARGS_CONFIG", "ActiveSkill", "Tool", "ToolContext", "ToolRegistry"]

# Set as `__pydantic_config__` on an argument dataclass: attribute docstrings become the
# descriptions in its JSON schema. A plain dict, so defining one imports nothing.
ARGS_CONFIG = {"use_attribute_docstrings": True}


@dataclass(frozen=True)
class ActiveSkill:
    """The skill active in the current request: the folder its own tools work in."""

    name: str
    folder: Path


@dataclass(frozen=True)
class ToolContext:
    """What a handler may use: the workspace it is confined to, Lily's own files and
    folders (configuration, every skills root, persona, the Lily home, `.lily`), inside
    the workspace or not, which no tool may write, and the active skill (None outside
    a skill)."""

    workspace: Path
    protected: tuple[Path, ...] = ()
    skill: ActiveSkill | None = None


@functools.cache
def _parameters(args_model: type) -> dict[str, Any]:
    from pydantic import TypeAdapter  # the conversation path only

    schema = TypeAdapter(args_model).json_schema()
    schema.pop("title", None)
    return schema


@dataclass(frozen=True)
class Tool:
    """A tool the model (or, if `owner_only`, only the person) can run.

    `text_argument` names the argument that receives the raw request text when the
    tool is a skill's `command_tool`; a tool without one cannot be dispatched.
    `needs_skill`: offered to the model only while a skill is active (the skill's own
    tools). `explicit`: `allow: "*"` does not cover it; the policy must name it.
    `kept_by`: lower-case `allowed-tools` names that keep the tool when a skill narrows
    the tools (its own name always does); `None` means narrowing never removes it.
    """

    name: str
    description: str
    args_model: type  # a dataclass: the arguments' one description
    handler: Callable[[Any, ToolContext], str]
    owner_only: bool = False
    text_argument: str | None = None
    needs_skill: bool = False
    explicit: bool = False
    kept_by: frozenset[str] | None = frozenset()

    def parse_arguments(self, arguments: dict[str, Any]) -> Any:
        """The arguments as `args_model`; raises validation.ShapeError."""
        return build(self.args_model, arguments)

    def json_schema(self) -> dict[str, Any]:
        """The OpenAI-style function description the model is offered."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": _parameters(self.args_model),
            },
        }


class ToolRegistry:
    """Tools by name; one registry per session, never shared between sessions."""

    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        if not dataclasses.is_dataclass(tool.args_model):
            raise ValueError(f"{tool.name}: args_model must be a dataclass")
        names = {f.name for f in dataclasses.fields(tool.args_model)}
        if tool.text_argument and tool.text_argument not in names:
            raise ValueError(f"{tool.name}: text_argument {tool.text_argument!r} is no field")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> frozenset[str]:
        return frozenset(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(sorted(self._tools.values(), key=lambda t: t.name))

    def __len__(self) -> int:
        return len(self._tools)
