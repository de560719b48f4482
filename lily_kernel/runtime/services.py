"""The services a session runs: the tool gate, the script host, the Python kernel, the MCP
servers, and the proxy (the sandbox's way out, network/proxy.py).

Each is made on first use and reads its settings from the workspace in force
(`workspace()`, the runtime's) when it is used, never from a copy: taking up a new
workspace (trust given, MCP tools joined) is one assignment, and the next run has its
time limit, variables and memory limit, the next tool call its policy.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

from lily_kernel.environment import Workspace
from lily_kernel.events import EventLog
from lily_kernel.redaction import Redactor, secret_values
from lily_kernel.tools import PolicyState

if TYPE_CHECKING:  # each loads with its first use, not at the kernel's start
    from lily_kernel.execution.python_host import PythonHost
    from lily_kernel.execution.runner import ScriptHost, ScriptPlan, ScriptResult
    from lily_kernel.execution.way_out import WayOut
    from lily_kernel.mcp_tools.session import McpServers
    from lily_kernel.network.proxy import SessionProxy
    from lily_kernel.runtime.network_flow import SessionNetwork
    from lily_kernel.runtime.skill_grants import SkillGrants
    from lily_kernel.runtime.tool_gate import ToolGate

__all__ = ["Services"]


@dataclass
class Services:
    """One session's services over its current workspace (`workspace`), its log and the
    person's policy choices; `run_script`: how skill scripts run (replay's answers them
    from the recording; None: for real). Two sessions never share one."""

    workspace: Callable[[], Workspace]
    log: EventLog
    policy_state: PolicyState
    run_script: Callable[[ScriptPlan, float], Awaitable[ScriptResult]] | None
    _gate: tuple[Workspace, ToolGate] | None = field(default=None, repr=False)
    _proxy: SessionProxy | None = field(default=None, repr=False)
    _proxy_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # A run wrote in the workspace's skills folder: the session's skills are read again
    # before its next cell (runtime/trust_flow.py, `reread_written_skills`).
    skills_written: bool = False

    @cached_property
    def scripts(self) -> ScriptHost:
        """How skill scripts and shell commands run here (the runner loads now)."""
        from lily_kernel.execution.runner import ScriptHost, run_script

        return ScriptHost(self.workspace().host.environ,
                          lambda: self.workspace().script_settings(),
                          run=self.run_script or run_script,
                          way_out=self.way_out,
                          python=lambda: self.python.python_environment())

    def way_out(self) -> WayOut | None:
        """The sandbox's way out: the session's proxy (network/proxy.py), started with the
        first sandboxed run, deciding each new host through `network` (None when it cannot
        start: the sandbox then has no network, as before)."""
        from lily_kernel.execution.folders import make_private_folder, remove_with_owner
        from lily_kernel.execution.way_out import WayOut
        from lily_kernel.network.proxy import BRIDGE, SessionProxy

        with self._proxy_lock:
            if self._proxy is None:
                try:
                    folder = make_private_folder("network")
                    remove_with_owner(folder)  # its socket lives as long as the session
                    self._proxy = SessionProxy.start(
                        folder, self.network.decisions.decide, self.network.decisions.report)
                except OSError:
                    return None
            return WayOut(self._proxy.socket, BRIDGE)

    @cached_property
    def network(self) -> SessionNetwork:
        """The session's host decisions (network/asking.py), asked in the cell of the tool
        call that runs (runtime/network_flow.py): the proxy's Decider and Reporter."""
        from lily_kernel.runtime.network_flow import SessionNetwork

        return SessionNetwork(self.workspace, self.policy_state, self.log)

    @cached_property
    def python(self) -> PythonHost:
        """The session's Python kernel (started by its first run). Its run settings are
        read at each run; the kernel it chooses and the paths it protects are the
        workspace's when it is made, and made anew when they change (`renew_python`)."""
        from lily_kernel.execution.python_host import PythonHost

        env = self.workspace()
        return PythonHost(env.host.environ, env.workspace, env.tool_context.run_protected,
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
                                       replace(env.tool_context, services=self,
                                               skills_written=self._skills_written), self.log,
                                       redact=Redactor(secrets), state=self.policy_state,
                                       network=self.network, grants=self._grants(env))
        return self._gate[1]

    def _skills_written(self) -> None:
        self.skills_written = True

    def _grants(self, env: Workspace) -> SkillGrants | None:
        """The skills' pre-approvals where the person's environment enables them."""
        from lily_kernel.runtime.skill_grants import SkillGrants
        from lily_kernel.skills.overrides import override_settings

        settings = override_settings(env.host.environ)
        return SkillGrants(settings, env.trust.trusted, self.log) \
            if settings.preapproval else None

    def renew_python(self) -> bool:
        """After a new workspace was taken up (trust given): the Python kernel, when the
        kernel it chose or the paths it protects are no longer the workspace's, is ended
        and made anew with them at its next run. Whether a running kernel was ended."""
        if "python" not in self.__dict__:
            return False
        host, env = self.python, self.workspace()
        if (host.kernel_name == env.config.python_kernel
                and tuple(host.protected) == env.tool_context.run_protected):
            return False
        running = host.running is not None
        host.close()
        del self.__dict__["python"]
        return running

    def end_turn(self) -> tuple[tuple[tuple[int, str], ...], int]:
        """The turn ended: the shell's session sandbox ends with it (what its commands
        left running never outlives the person's cell: docs/execution.md); what was
        ended (processes, count)."""
        if "scripts" not in self.__dict__:
            return (), 0
        return self.scripts.end_turn()

    def close(self) -> None:
        """End what runs: the MCP servers, the Python kernel, the shell's sandbox and the
        proxy, if they were started."""
        if "mcp" in self.__dict__:
            self.mcp.close()
        if "python" in self.__dict__:
            self.python.close()
        if "scripts" in self.__dict__:  # the shell's session sandbox
            self.scripts.close()
        with self._proxy_lock:
            proxy, self._proxy = self._proxy, None
        if proxy is not None:
            proxy.stop()
        if "network" in self.__dict__:  # what ended after the last tool call
            self.network.write_events(None)
