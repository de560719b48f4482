"""Tools: the registry, the policy gate every call passes, and the built-in tools.

The built-in tools are declared by their records (`BUILT_IN`): a session's policy is made
from those, and a tool's module is imported with the tool's first use (most cells call
none; each module's argument classes cost their compile at import)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from lily_kernel.tools.context import (
    ActiveSkill,
    Hosts,
    Question,
    SkillSelector,
    ToolContext,
    ToolServices,
)
from lily_kernel.tools.policy import (
    AskReason,
    PolicyRefusal,
    PolicyState,
    Refusal,
    ToolPolicy,
    check_call,
)
from lily_kernel.tools.registry import Tool, ToolOutcome, ToolRecord, ToolRegistry, blocking

if TYPE_CHECKING:  # loaded by __getattr__ below, with their first use
    from lily_kernel.execution.runner import ScriptHost
    from lily_kernel.tools.files import file_tools, resolve_in_workspace

__all__ = [
    "BUILT_IN",
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
    "ToolRecord",
    "ToolRegistry",
    "ToolServices",
    "blocking",
    "check_call",
    "default_registry",
    "file_tools",
    "resolve_in_workspace",
]


# The built-in tools: the model's skill selection, the workspace's files, the active
# skill's files and scripts, the shell, the session's Python. Each record says what its
# tool says of itself (the registry checks when it makes the tool).
BUILT_IN = (
    ToolRecord("load_skill", "lily_kernel.tools.load_skill:skill_selection_tool",
               governed=False),
    ToolRecord("list", "lily_kernel.tools.files:file_tools"),
    ToolRecord("python", "lily_kernel.tools.python:python_tool", asked=True,
               asks_untrusted=True),
    ToolRecord("read", "lily_kernel.tools.files:file_tools"),
    ToolRecord("read_skill_file", "lily_kernel.tools.skill_files:read_skill_file_tool"),
    ToolRecord("run_skill_script", "lily_kernel.tools.scripts:run_skill_script_tool",
               explicit=True, asks_untrusted=True),
    ToolRecord("shell", "lily_kernel.tools.shell:shell_tool", asked=True, asks_untrusted=True),
    ToolRecord("write", "lily_kernel.tools.files:file_tools", asks_untrusted=True),
)


def default_registry() -> ToolRegistry:
    """A new registry holding the built-in tools, each made (fresh, for this registry)
    with its first use."""
    return ToolRegistry(declared=BUILT_IN)


def __getattr__(name: str) -> Any:
    """The file tools' helpers and the script host, their modules loaded with their
    first use."""
    if name in ("file_tools", "resolve_in_workspace"):
        return getattr(importlib.import_module("lily_kernel.tools.files"), name)
    if name == "ScriptHost":
        return getattr(importlib.import_module("lily_kernel.execution.runner"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
