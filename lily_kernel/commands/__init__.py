"""Commands: parse `/` cells and run them deterministically, never asking a model."""

from lily_kernel.commands.builtins import (
    CommandOutcome,
    default_commands,
    describe_skill,
    dispatched,
    run_command,
)
from lily_kernel.commands.completion import Completion, complete, inspect
from lily_kernel.commands.listing import ranked_result, skills_result
from lily_kernel.commands.parser import ParsedCommand, parse_command
from lily_kernel.commands.record import (
    AskAgain,
    Conversation,
    ConversationBook,
    ConversationChange,
)
from lily_kernel.commands.registry import (
    CommandContext,
    CommandSpec,
    CommandTable,
    StateChange,
    WorkspaceView,
    blocking,
)
from lily_kernel.commands.resolve import Resolved, resolve
from lily_kernel.commands.results import (
    AskTrust,
    CommandResult,
    Intent,
    RestartPython,
    RunPython,
    ShowMcp,
    SkillInvocation,
    ToolDispatch,
)

__all__ = [
    "AskAgain",
    "AskTrust",
    "CommandContext",
    "CommandOutcome",
    "CommandResult",
    "CommandSpec",
    "CommandTable",
    "Completion",
    "Conversation",
    "ConversationBook",
    "ConversationChange",
    "Intent",
    "ParsedCommand",
    "Resolved",
    "RestartPython",
    "RunPython",
    "ShowMcp",
    "SkillInvocation",
    "StateChange",
    "ToolDispatch",
    "WorkspaceView",
    "blocking",
    "complete",
    "default_commands",
    "describe_skill",
    "dispatched",
    "inspect",
    "parse_command",
    "ranked_result",
    "resolve",
    "run_command",
    "skills_result",
]
