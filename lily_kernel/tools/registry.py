"""The tool registry: named tools with a pydantic argument model and a handler."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

__all__ = ["ActiveSkill", "Tool", "ToolContext", "ToolRegistry"]


@dataclass(frozen=True)
class ActiveSkill:
    """The skill active in the current request: the folder its own tools work in."""

    name: str
    folder: Path


@dataclass(frozen=True)
class ToolContext:
    """What a handler may use: the workspace it is confined to, the paths in it that
    are Lily's own (configuration, skills, persona), which no tool may write, and the
    active skill (None outside a skill)."""

    workspace: Path
    protected: tuple[Path, ...] = ()
    skill: ActiveSkill | None = None


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
    args_model: type[BaseModel]
    handler: Callable[[Any, ToolContext], str]
    owner_only: bool = False
    text_argument: str | None = None
    needs_skill: bool = False
    explicit: bool = False
    kept_by: frozenset[str] | None = frozenset()

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
