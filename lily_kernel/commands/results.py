"""What a command produced: a title and blocks (display/blocks.py, rendered by display/),
an error, or an intent: what the runtime is to do for it (commands never touch the
session), carried out in one place (runtime/command_flow.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from lily_kernel.commands.record import AskAgain
from lily_kernel.display import Block

__all__ = ["AskTrust", "CommandResult", "Intent", "RestartPython", "RunPython", "ShowMcp",
           "SkillInvocation", "ToolDispatch"]


@dataclass(frozen=True)
class SkillInvocation:
    """Answer `request` with the skill forced (a prompt_rewrite invocation). The runtime
    builds the model request, not the command."""

    skill: str
    request: str


@dataclass(frozen=True)
class ToolDispatch:
    """Run the `tool_dispatch` skill's tool with the person's request as its text argument
    (no model); the runtime's tool gate runs it."""

    skill: str
    tool: str
    arguments: dict[str, str]


@dataclass(frozen=True)
class AskTrust:
    """`/trust`: put the trust question to the person (again) and take up what they trust;
    what came of it is the command's result."""


@dataclass(frozen=True)
class ShowMcp:
    """`/mcp`: start the MCP servers not started yet, then show each one's state and tools
    with the policy in force (commands/mcp.py renders them)."""


@dataclass(frozen=True)
class RunPython:
    """`/python <code>`: run `code` in the session's Python kernel through the tool gate, as
    the person's call (commands/python.py says what its outcome means)."""

    code: str


@dataclass(frozen=True)
class RestartPython:
    """`/python restart`: end the session's Python kernel (the next run starts a new one);
    the result says what it was."""


# Every side effect a command may ask for (AskAgain: /rerun, commands/record.py).
Intent = SkillInvocation | ToolDispatch | AskAgain | AskTrust | ShowMcp | RunPython | RestartPython


@dataclass(frozen=True)
class CommandResult:
    """What a command produced. `error` set means it failed and changed nothing; `intent`:
    what the runtime does for it (None: nothing)."""

    command: str
    title: str = ""
    blocks: tuple[Block, ...] = ()
    error: str | None = None
    intent: Intent | None = None
    skill: str | None = None
    notices: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.error is None
