"""The tool registry: named tools, each with an argument dataclass and an async handler.

A tool's arguments are described once, as a frozen dataclass whose attribute docstrings
are the descriptions the model reads. Every call is validated against it with plain
code (`validation.build`); the JSON schema offered to the model is made from it by
pydantic, imported only then (the conversation path), never at kernel start. A handler
is `async def handler(args, ctx) -> str` (tools/context.py says what `ctx` holds), or
a `ToolResult` when its text is made from a run's typed result (whoever needs to know how
the run ended reads that, never the text); it raises ToolError when it fails on its
input and ToolRefusedError when the call may not run.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from lily_kernel.tools.context import Question, ToolContext
from lily_kernel.validation import build

if TYPE_CHECKING:  # the facts of a run load with the first run, not `lily skills`
    from lily_kernel.execution.runner import RunResult
    from lily_kernel.execution.subkernel import RunReply

    # A run's typed result: a process's (a skill script, a shell command), the Python
    # kernel's.
    RunFact = RunResult | RunReply

__all__ = ["ARGS_CONFIG", "Handler", "Offered", "Tool", "ToolOutcome", "ToolRecord",
           "ToolRegistry", "ToolResult", "blocking"]

# Set as `__pydantic_config__` on an argument dataclass: attribute docstrings become the
# descriptions in its JSON schema. A plain dict, so defining one imports nothing.
ARGS_CONFIG = {"use_attribute_docstrings": True}


# Returns the text the model reads (a str), or a ToolResult: the text beside the run's
# typed result (checked when it returns: ToolOutcome.returned).
Handler = Callable[[Any, ToolContext], Awaitable[Any]]
# When the model is offered the tool: always; only while a skill is active (the skill's
# own tools); only while it may still choose the request's skill (not when the person
# forced one).
Offered = Literal["always", "with_skill", "while_selecting"]


T = TypeVar("T")


def blocking(function: Callable[[Any, ToolContext], T]
             ) -> Callable[[Any, ToolContext], Awaitable[T]]:
    """A handler (or `prepare`) doing file-system work in a worker thread: a large read
    or a slow disk must leave the kernel responsive (and the stop button working)."""

    @functools.wraps(function)
    async def handler(args: Any, ctx: ToolContext) -> T:
        import asyncio  # (the CLI builds a registry without an event loop)

        return await asyncio.to_thread(function, args, ctx)

    return handler


@functools.cache
def _parameters(args_model: type) -> dict[str, Any]:
    from pydantic import TypeAdapter  # the conversation path only

    schema = TypeAdapter(args_model).json_schema()
    # pydantic's titles repeat each name (`"title": "Path"` for `path`): tokens the model
    # reads with every request, and nothing it needs.
    schema.pop("title", None)
    for field in schema.get("properties", {}).values():
        field.pop("title", None)
    return schema


@dataclass(frozen=True)
class Tool:
    """A tool the model (or, if `owner_only`, only the person) can run.

    `text_argument` names the argument that receives the raw request text when the
    tool is a skill's `command_tool`; a tool without one cannot be dispatched.
    `offered`: when the model is offered it (see `Offered`). `explicit`: `allow: "*"`
    does not cover it; the policy must name it. `governed` False: the tool policy does
    not apply (Lily's own skill selection, `load_skill`: not named in lily.yaml, not
    listed in /help's policy). `kept_by`: lower-case `allowed-tools` names that keep the
    tool when a skill narrows the tools (its own name always does); `None` means
    narrowing never removes it. `prepare`: the call made ready before anyone is asked,
    as the question the person would read (None: its name and arguments): it checks
    what the call would act on first (a path that may not be written fails here, never
    after a question), its `subject` is what the handler then does, and `always` asks
    the person about this very call whatever the policy says (a write over a notebook).
    `asks_untrusted`: the tool changes the workspace, so while the person does not trust
    the folder each call is asked. `asked`: the tool runs code (python, shell), so
    `allow: "*"` lets it run only after the person's yes to each call; naming it in
    `tools.allow`, or the profile `auto`, lets it run without asking. `announce`: the notice a call leaves in the
    notebook, from its arguments and outcome (None: `Tool <name>: ran`, or why not; a
    function returning None: no notice). `schema`: the arguments' JSON schema as another
    program gave it (an MCP server's tool): then `args_model` is `dict`, the arguments
    are passed as the object they are, and that program checks them.
    """

    name: str
    description: str
    args_model: type  # a dataclass: the arguments' one description
    handler: Handler
    owner_only: bool = False
    text_argument: str | None = None
    offered: Offered = "always"
    explicit: bool = False
    governed: bool = True
    kept_by: frozenset[str] | None = frozenset()
    prepare: Callable[[Any, ToolContext], Awaitable[Question]] | None = None
    asks_untrusted: bool = False
    asked: bool = False
    announce: Callable[[dict[str, Any], ToolOutcome], str | None] | None = None
    schema: dict[str, Any] | None = None

    def parse_arguments(self, arguments: dict[str, Any]) -> Any:
        """The arguments as `args_model`; raises validation.ShapeError."""
        if self.schema is not None:
            return dict(arguments)
        return build(self.args_model, arguments)

    def json_schema(self) -> dict[str, Any]:
        """The OpenAI-style function description the model is offered."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": (self.schema if self.schema is not None
                               else _parameters(self.args_model)),
            },
        }


@dataclass(frozen=True)
class ToolResult:
    """What a handler returns when its text is made from a run: the text, beside the
    run's typed result; `failed`: the run failed in its own way (the code raised)."""

    text: str
    result: RunFact
    failed: bool = False


@dataclass(frozen=True)
class ToolOutcome:
    """What became of one attempted call: it ran (`text` is what it returned), was
    refused (`text` says why; it never ran) or failed (`text` says how); `result`: the
    typed result of the run behind the text (None: no run). Facts only: prompting/ words
    them for the model, the runtime for the person."""

    name: str
    status: Literal["ran", "refused", "failed"]
    text: str
    result: RunFact | None = None

    @classmethod
    def returned(cls, name: str, value: object) -> ToolOutcome:
        """The outcome of a handler that returned `value` (a str or a ToolResult)."""
        if isinstance(value, ToolResult):
            return cls(name, "failed" if value.failed else "ran", value.text, value.result)
        if not isinstance(value, str):
            raise TypeError(f"the handler of {name} returned {type(value).__name__}, "
                            "not its text (a str or a ToolResult)")
        return cls(name, "ran", value)

    @property
    def allowed(self) -> bool:
        """False only for a refusal: the call was not let through."""
        return self.status != "refused"

    @property
    def detail(self) -> str:
        """Why it did not run, or how it failed, for people and the log ("" when it ran)."""
        if self.status == "refused":
            return f"refused: {self.text}."
        return "" if self.status == "ran" else self.text


@dataclass(frozen=True)
class ToolRecord:
    """What the registry knows of a tool before its module is imported: its name, what
    the policy reads of it (`Tool`'s fields of the same names), and where it is made
    (`made_by`: "module:function", returning the tool or a list holding it). A session
    builds its policy from the records; a tool's module is imported with the tool's first
    use (a call, its schema, a listing of the tools), and the tool made there must say
    the same of itself (the registry checks)."""

    name: str
    made_by: str = ""
    governed: bool = True
    explicit: bool = False
    asked: bool = False
    asks_untrusted: bool = False

    @classmethod
    def of(cls, tool: Tool, made_by: str = "") -> ToolRecord:
        return cls(tool.name, made_by, governed=tool.governed, explicit=tool.explicit,
                   asked=tool.asked, asks_untrusted=tool.asks_untrusted)


class ToolRegistry:
    """Tools by name; one registry per session, never shared between sessions. A tool is
    registered made, or declared by its record and made with its first use."""

    def __init__(self, tools: list[Tool] | None = None,
                 declared: tuple[ToolRecord, ...] = ()) -> None:
        self._records: dict[str, ToolRecord] = {}
        self._tools: dict[str, Tool] = {}
        for record in declared:
            self.declare(record)
        for tool in tools or []:
            self.register(tool)

    def declare(self, record: ToolRecord) -> None:
        """A tool known by its record, its module imported when it is first used."""
        if record.name in self._records:
            raise ValueError(f"a tool named {record.name!r} is already registered")
        self._records[record.name] = record

    def register(self, tool: Tool) -> None:
        if tool.name in self._records:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        _check(tool)
        self._records[tool.name] = ToolRecord.of(tool)
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        record = self._records.get(name)
        if record is None:
            return None
        return self._tools.get(name) or self._make(record)

    def names(self) -> frozenset[str]:
        return frozenset(self._records)

    def records(self) -> Iterator[ToolRecord]:
        """What the policy reads of every tool, by name, without making any."""
        return iter(sorted(self._records.values(), key=lambda r: r.name))

    def __iter__(self) -> Iterator[Tool]:
        tools = (self.get(name) for name in sorted(self._records))
        return iter([tool for tool in tools if tool is not None])

    def __len__(self) -> int:
        return len(self._records)

    def _make(self, record: ToolRecord) -> Tool:
        """The declared tool, made by its module (with the other tools it makes)."""
        module, function = record.made_by.split(":")
        made = getattr(importlib.import_module(module), function)()
        for tool in made if isinstance(made, list) else [made]:
            declared = self._records.get(tool.name)
            if declared is None or tool.name in self._tools:
                continue
            if ToolRecord.of(tool, declared.made_by) != declared:
                raise ValueError(f"{tool.name}: made as {ToolRecord.of(tool)}, declared as "
                                 f"{declared}")
            _check(tool)
            self._tools[tool.name] = tool
        if record.name not in self._tools:
            raise ValueError(f"{record.made_by} made no tool named {record.name!r}")
        return self._tools[record.name]


def _check(tool: Tool) -> None:
    """Refuse a tool the registry could not call: raises ValueError."""
    if not inspect.iscoroutinefunction(tool.handler):
        raise ValueError(f"{tool.name}: the handler must be async (blocking() wraps "
                         "a synchronous one)")
    if tool.schema is not None:
        return  # arguments another program describes
    if not dataclasses.is_dataclass(tool.args_model):
        raise ValueError(f"{tool.name}: args_model must be a dataclass")
    names = {f.name for f in dataclasses.fields(tool.args_model)}
    if tool.text_argument and tool.text_argument not in names:
        raise ValueError(f"{tool.name}: text_argument {tool.text_argument!r} is no field")
