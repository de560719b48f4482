"""The tool registry: named tools with a pydantic argument model and a handler."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

__all__ = ["Tool", "ToolContext", "ToolRegistry"]


@dataclass(frozen=True)
class ToolContext:
    """What a handler may use: the workspace it is confined to, and Lily's own files
    and folders (configuration, every skills root, persona, the Lily home, `.lily`),
    inside the workspace or not, which no tool may write."""

    workspace: Path
    protected: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Tool:
    """A tool the model (or, if `owner_only`, only the person) can run.

    `text_argument` names the argument that receives the raw request text when the
    tool is a skill's `command_tool`; a tool without one cannot be dispatched.
    """

    name: str
    description: str
    args_model: type[BaseModel]
    handler: Callable[[Any, ToolContext], str]
    owner_only: bool = False
    text_argument: str | None = None

    def json_schema(self) -> dict[str, Any]:
        """The OpenAI-style function description the model is offered."""
        schema = self.args_model.model_json_schema()
        schema.pop("title", None)
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": schema,
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
        if tool.text_argument and tool.text_argument not in tool.args_model.model_fields:
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
