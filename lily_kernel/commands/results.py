"""What a command produced: a title and blocks (display/blocks.py, rendered by display/),
an error, or an intent for the runtime (a skill for the model, a tool to run, a turn asked
again)."""

from __future__ import annotations

from dataclasses import dataclass, field

from lily_kernel.commands.record import AskAgain
from lily_kernel.display import Block

__all__ = ["CommandResult", "SkillInvocation", "ToolDispatch"]


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
    ask_again: AskAgain | None = None
    skill: str | None = None
    notices: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.error is None
