"""Tools: the registry, the policy gate every call passes, and the built-in file tools."""

from lily_kernel.tools.files import file_tools, resolve_in_workspace
from lily_kernel.tools.policy import (
    Caller,
    ToolOutcome,
    ToolPolicy,
    allowed_tool_names,
    run_tool,
)
from lily_kernel.tools.registry import Tool, ToolContext, ToolRegistry

__all__ = [
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
    "run_tool",
]


def default_registry() -> ToolRegistry:
    """A new registry holding the built-in tools."""
    return ToolRegistry(file_tools())
