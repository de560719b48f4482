"""The services a session runs: the tool gate, the script host, the Python kernel, the MCP
servers (and next, the proxy).

Each is made on first use and reads its settings from the workspace in force
(`workspace()`, the runtime's) when it is used, never from a copy: taking up a new
workspace (trust given, MCP tools joined) is one assignment, and the next run has its
time limit, variables and memory limit, the next tool call its policy.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

from lily_kernel.environment import Workspace
from lily_kernel.events import EventLog
from lily_kernel.execution.runner import ScriptHost, ScriptPlan, ScriptResult
from lily_kernel.redaction import Redactor, secret_values
from lily_kernel.tools import PolicyState

if TYPE_CHECKING:  # each loads with its first use, not at the kernel's start
    from lily_kernel.execution.python_host import PythonHost
    from lily_kernel.mcp_tools.session import McpServers
    from lily_kernel.runtime.tool_gate import ToolGate

__all__ = ["Services"]


@dataclass
class Services:
    """One session's services over its current workspace (`workspace`), its log and the
    person's policy choices; `run_script`: how skill scripts run (replay's answers them
    from the recording). Two sessions never share one."""

    workspace: Callable[[], Workspace]
    log: EventLog
    policy_state: PolicyState
    run_script: Callable[[ScriptPlan, float], Awaitable[ScriptResult]]
    _gate: tuple[Workspace, ToolGate] | None = field(default=None, repr=False)

    @cached_property
    def scripts(self) -> ScriptHost:
        """How skill scripts and shell commands run here."""
        return ScriptHost(self.workspace().host.environ,
                          lambda: self.workspace().script_settings(), run=self.run_script,
                          python=lambda: self.python.python_environment())

    @cached_property
    def python(self) -> PythonHost:
        """The session's Python kernel (started by its first run). Its run settings are
        read at each run; the kernel it chooses and the paths it protects are the
        workspace's when it is made, and made anew when they change (`renew_python`)."""
        from lily_kernel.execution.python_host import PythonHost

        env = self.workspace()
        return PythonHost(env.host.environ, env.workspace, env.tool_context.protected,
                          self.scripts.sandbox, env.config.python_kernel,
                          settings=lambda: self.workspace().python_settings())

    @cached_property
    def mcp(self) -> McpServers:
        """The session's MCP servers (none started until a chat cell or `/mcp`)."""
        from lily_kernel.mcp_tools.session import McpServers

        env = self.workspace()
        return McpServers(env.workspace, env.host.environ)

    @property
    def gate(self) -> ToolGate:
        """The one gate for tool calls (the model's and the person's), over the workspace
        in force: its registry, policy and Lily's own files."""
        from lily_kernel.runtime.tool_gate import ToolGate  # with the first tool call

        env = self.workspace()
        if self._gate is None or self._gate[0] is not env:  # made anew for a new workspace
            secrets = secret_values(os.environ) + secret_values(env.host.environ)
            self._gate = env, ToolGate(env.registry, env.policy,
                                       replace(env.tool_context, services=self), self.log,
                                       redact=Redactor(secrets), state=self.policy_state)
        return self._gate[1]

    def renew_python(self) -> bool:
        """After a new workspace was taken up (trust given): the Python kernel, when the
        kernel it chose or the paths it protects are no longer the workspace's, is ended
        and made anew with them at its next run. Whether a running kernel was ended."""
        if "python" not in self.__dict__:
            return False
        host, env = self.python, self.workspace()
        if (host.kernel_name == env.config.python_kernel
                and tuple(host.protected) == tuple(env.tool_context.protected)):
            return False
        running = host.running is not None
        host.close()
        del self.__dict__["python"]
        return running

    def close(self) -> None:
        """End what runs: the MCP servers and the Python kernel, if they were started."""
        if "mcp" in self.__dict__:
            self.mcp.close()
        if "python" in self.__dict__:
            self.python.close()
