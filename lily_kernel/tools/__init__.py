"""Tools: the registry, the policy gate every call passes, and the built-in file tools."""

from lily_kernel.tools.files import file_tools, resolve_in_workspace
from lily_kernel.tools.policy import (
    Caller,
    ToolOutcome,
    ToolPolicy,
    allowed_tool_names,
    run_checked,
    run_tool,
)
from lily_kernel.tools.registry import ActiveSkill, Tool, ToolContext, ToolRegistry
from lily_kernel.tools.scripts import run_skill_script_tool
from lily_kernel.tools.skill_files import read_skill_file_tool

__all__ = [
    "ActiveSkill",
    "Caller",
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "ToolPolicy",
    "ToolRegistry",
    "allowed_tool_names",
    "default_registry",
    "file_tools",
    "resolve_in_workspace",
    "run_checked",
    "run_tool",
]


def default_registry() -> ToolRegistry:
    """A new registry holding the built-in tools."""
    return ToolRegistry([*file_tools(), read_skill_file_tool(), run_skill_script_tool()])
