"""The command seam: each `/` command declared once (name, handler, help, what its
argument is, how it meets trust), what its handler gets (`CommandContext`) and returns
(`CommandOutcome`, `StateChange`). `/help`, completion, Shift-Tab, the trust question and
docs/commands.md are derived from the records (as tools are from theirs, tools/).

A handler is `async def handler(ctx, argument) -> CommandOutcome` (commands/context.py
says what `ctx` holds); it returns the result and the session change to apply on
success, and raises CommandError with the exact message when it fails. A handler doing
file-system work is wrapped in `blocking`, so the stop button stays live.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from lily_kernel.commands.record import ConversationBook, ConversationChange
from lily_kernel.commands.results import CommandResult
from lily_kernel.config import Profile
from lily_kernel.persona import Persona
from lily_kernel.session import ConversationState, Session
from lily_kernel.skills import SkillSnapshot
from lily_kernel.tools import ToolPolicy, ToolRegistry

if TYPE_CHECKING:  # the kernel's machinery loads with the first run
    from lily_kernel.display.network import NetworkOverview
    from lily_kernel.execution.python_host import PythonHost

__all__ = [
    "ArgumentKind",
    "CommandContext",
    "CommandOutcome",
    "CommandSpec",
    "CommandTable",
    "Handler",
    "StateChange",
    "WorkspaceView",
    "blocking",
]

Handler = Callable[["CommandContext", str], Awaitable["CommandOutcome"]]
# What a command's first argument is, for completion and Shift-Tab: nothing to complete,
# a skill the person may invoke, any skill (help shows them all), an agent.
ArgumentKind = Literal["text", "invocable_skill", "skill", "agent"]


def blocking(function: Callable[[CommandContext, str], CommandOutcome]) -> Handler:
    """A handler doing file-system work (a reload reads thousands of files) in a worker
    thread: the stop button can end the cell meanwhile; the change is applied after."""

    @functools.wraps(function)
    async def handler(ctx: CommandContext, argument: str) -> CommandOutcome:
        import asyncio  # (the CLI builds the table without an event loop)

        return await asyncio.to_thread(function, ctx, argument)

    return handler


@dataclass(frozen=True)
class CommandSpec:
    """A built-in command. `usage` and `summary` are its line in `/help` (and in
    docs/commands.md); `more` are further lines for other forms of it (`/skill:<name>`).
    `argument`: what its first argument is. `names_skill`: its first argument names a
    skill it invokes (a held skill then asks the trust question first). `ranks`: with
    an argument, it ranks the skills (a first ranking that encodes many says so).
    `raw`: its handler receives the rest of the cell as written (code keeps its
    indentation), not stripped. `choices`: the words its argument takes, if a few
    (`/policy`'s profiles), for completion."""

    name: str
    summary: str
    handler: Handler
    usage: str = ""
    argument: ArgumentKind = "text"
    names_skill: bool = False
    ranks: bool = False
    more: tuple[tuple[str, str], ...] = ()
    raw: bool = False
    choices: tuple[str, ...] = ()

    def help_lines(self) -> tuple[tuple[str, str], ...]:
        return ((self.usage or f"/{self.name}", self.summary), *self.more)


class CommandTable:
    """Built-in commands by name; one table per session."""

    def __init__(self, commands: list[CommandSpec] | None = None) -> None:
        self._commands: dict[str, CommandSpec] = {}
        for command in commands or []:
            self.register(command)

    def register(self, command: CommandSpec) -> None:
        if command.name in self._commands:
            raise ValueError(f"a command named /{command.name} is already registered")
        if not inspect.iscoroutinefunction(command.handler):
            raise ValueError(f"/{command.name}: the handler must be async (blocking() "
                             "wraps a synchronous one)")
        self._commands[command.name] = command

    def get(self, name: str) -> CommandSpec | None:
        return self._commands.get(name)

    def names(self) -> frozenset[str]:
        return frozenset(self._commands)

    def __iter__(self) -> Iterator[CommandSpec]:
        return iter(self._commands.values())  # in registration order: /help's order


class WorkspaceView(Protocol):
    """What commands read of the session's workspace (environment.py's `Workspace`):
    its commands and tools, the lily.yaml settings held until it is trusted, and its
    loaders (they do I/O): `load_snapshot(version)` rebuilds skills from disk,
    `load_persona(agent)` reads an agent, `list_agents()` lists them."""

    @property
    def commands(self) -> CommandTable: ...

    @property
    def registry(self) -> ToolRegistry: ...

    @property
    def held_settings(self) -> tuple[str, ...]: ...

    def load_snapshot(self, version: int) -> SkillSnapshot: ...

    def load_persona(self, agent: str) -> Persona: ...

    def list_agents(self) -> list[str]: ...


@dataclass(frozen=True)
class CommandContext:
    """Read-only inputs of a command: commands never touch the session. What they would
    have done to it (ask trust, start the MCP servers, run a tool, end the Python kernel,
    ask the model) they hand the runtime as an intent on their result (commands/results.py).

    `workspace`: the session's (loaders included); `policy`: the one in force; `stop`, set
    when the cell is stopped (a ranking then stops encoding skills); `in_cell`: a cell runs
    the command, where the person can be asked and tools shown (False: a script's or a
    test's `run_command`); `python`: the session's Python kernel, to describe it (`/python`;
    None: no Python here); `conversations`: the session's record (None: it keeps none);
    `last_request`: the last turn's request (`/rerun`); `network`: the session's hosts
    and lists, as `/network` shows them (None: no network here).
    """

    session: Session
    workspace: WorkspaceView
    policy: ToolPolicy
    stop: threading.Event | None = None
    in_cell: bool = False
    python: Callable[[], PythonHost] | None = None
    conversations: ConversationBook | None = None
    last_request: str | None = None
    network: Callable[[], NetworkOverview] | None = None


@dataclass(frozen=True)
class StateChange:
    """The session fields a successful command replaces (None = unchanged); `policy`,
    the profile the person chose (`/policy`: the runtime applies it)."""

    skill_snapshot: SkillSnapshot | None = None
    active_agent: str | None = None
    persona: Persona | None = None
    policy: Profile | None = None
    conversation: ConversationChange | None = None

    def apply(self, session: Session) -> None:
        if self.skill_snapshot is not None:
            session.skill_snapshot = self.skill_snapshot
        if self.conversation is not None:
            session.conversation_state = ConversationState(list(self.conversation.messages))
        if self.persona is not None and self.active_agent is not None:
            session.active_agent = self.active_agent
            session.persona = self.persona


@dataclass(frozen=True)
class CommandOutcome:
    """What a command produced, and the session change to apply if it succeeded."""

    result: CommandResult
    change: StateChange | None = None
