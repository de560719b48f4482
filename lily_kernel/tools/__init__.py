"""Tools: the registry, the policy gate every call passes, and the built-in tools."""

from lily_kernel.execution.runner import ScriptHost
from lily_kernel.tools.context import (
    ActiveSkill,
    Hosts,
    Question,
    SkillSelector,
    ToolContext,
    ToolServices,
)
from lily_kernel.tools.files import file_tools, resolve_in_workspace
from lily_kernel.tools.load_skill import skill_selection_tool
from lily_kernel.tools.policy import (
    AskReason,
    PolicyRefusal,
    PolicyState,
    Refusal,
    ToolPolicy,
    check_call,
)
from lily_kernel.tools.python import python_tool
from lily_kernel.tools.registry import Tool, ToolOutcome, ToolRegistry, blocking
from lily_kernel.tools.scripts import run_skill_script_tool
from lily_kernel.tools.shell import shell_tool
from lily_kernel.tools.skill_files import read_skill_file_tool

__all__ = [
    "ActiveSkill",
    "AskReason",
    "Hosts",
    "PolicyRefusal",
    "PolicyState",
    "Question",
    "Refusal",
    "ScriptHost",
    "SkillSelector",
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "ToolPolicy",
    "ToolRegistry",
    "ToolServices",
    "blocking",
    "check_call",
    "default_registry",
    "file_tools",
    "resolve_in_workspace",
]


def default_registry() -> ToolRegistry:
    """A new registry holding the built-in tools: the model's skill selection, the
    workspace's files, the active skill's files and scripts, the shell, the session's
    Python."""
    return ToolRegistry([skill_selection_tool(), *file_tools(), read_skill_file_tool(),
                         run_skill_script_tool(), shell_tool(), python_tool()])
