"""Commands: parse `/` cells and run them deterministically, never asking a model."""

from lily_kernel.commands.builtins import (
    BUILTIN_COMMANDS,
    CommandOutcome,
    describe_skill,
    dispatched,
    ranks_skills,
    run_command,
)
from lily_kernel.commands.completion import Completion, complete, inspect
from lily_kernel.commands.context import CommandContext, StateChange
from lily_kernel.commands.listing import ranked_result, skills_result
from lily_kernel.commands.parser import ParsedCommand, parse_command
from lily_kernel.commands.render import render_html, render_markdown, render_plain
from lily_kernel.commands.results import (
    CommandResult,
    Details,
    Fields,
    Preformatted,
    SkillInvocation,
    Table,
    Text,
    ToolDispatch,
)

__all__ = [
    "BUILTIN_COMMANDS",
    "CommandContext",
    "CommandOutcome",
    "CommandResult",
    "Completion",
    "Details",
    "Fields",
    "ParsedCommand",
    "Preformatted",
    "SkillInvocation",
    "StateChange",
    "Table",
    "Text",
    "ToolDispatch",
    "complete",
    "describe_skill",
    "dispatched",
    "inspect",
    "parse_command",
    "ranked_result",
    "ranks_skills",
    "render_html",
    "render_markdown",
    "render_plain",
    "run_command",
    "skills_result",
]
