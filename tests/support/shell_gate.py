"""One `shell` (or `python`) call through Lily's real gate (runtime/tool_gate.py) outside a session, with
a real sandbox: what the model reads, the events, the questions the person was asked."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lily_kernel.config import ToolsConfig
from lily_kernel.events import Event, EventLog
from lily_kernel.execution.limits import Limits, RunSettings
from lily_kernel.execution.runner import ScriptHost
from lily_kernel.prompting import tool_result_text
from lily_kernel.runtime.tool_gate import ToolGate
from lily_kernel.tools import ActiveSkill, Hosts, ToolContext, ToolPolicy, default_registry
from lily_kernel.tools.policy import configured_policy
from tests.support.sink import RecordingSink


@dataclass(frozen=True)
class ShellCall:
    """A shell call as the tests read it."""

    status: str  # ran, refused, failed
    output: str  # what the model reads
    events: list[Event]
    questions: list[str]
    notices: list[str]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e.data for e in self.events if e.event == kind]


def shell_policy(**tools: Any) -> ToolPolicy:
    """The configured policy of `tools` (allow, ask, deny) over the built-in tools."""
    return configured_policy(ToolsConfig(**tools), default_registry())


def run_shell(command: str, workspace: Path, environ: Mapping[str, str], *,
              protected: Sequence[Path] = (), policy: ToolPolicy | None = None,
              answers: Sequence[str] = (), limits: Limits | None = None,
              timeout: float = 30, skill: ActiveSkill | None = None,
              host: ScriptHost | None = None) -> ShellCall:
    """Run `command` as the model's `shell` call; by default the policy allows the shell
    without asking (it is named in `allow`)."""
    host = host or ScriptHost(environ, RunSettings(timeout, limits=limits or Limits()))
    context = ToolContext(workspace, protected=tuple(protected), services=Hosts(host))
    return asyncio.run(_model_call(context, "shell", {"command": command}, policy, answers,
                                   skill))


def run_python(code: str, workspace: Path, environ: Mapping[str, str], *,
               protected: Sequence[Path] = (), limits: Limits | None = None,
               timeout: float = 30) -> ShellCall:
    """Run `code` as the model's `python` call, allowed, in a kernel of its own that
    ends afterwards."""
    from lily_kernel.execution.python_host import PythonHost

    settings = RunSettings(timeout, limits=limits or Limits())
    scripts = ScriptHost(environ, settings)
    kernel = PythonHost(environ, workspace, protected, scripts.sandbox, settings=settings)
    context = ToolContext(workspace, protected=tuple(protected),
                          services=Hosts(scripts, kernel))

    async def call() -> ShellCall:
        try:
            return await _model_call(context, "python", {"code": code},
                                     shell_policy(allow=("python",)), (), None)
        finally:
            kernel.close()

    return asyncio.run(call())


async def _model_call(context: ToolContext, tool: str, arguments: dict[str, Any],
                      policy: ToolPolicy | None, answers: Sequence[str],
                      skill: ActiveSkill | None) -> ShellCall:
    """One call of `tool` by the model through the real gate (by default, the policy
    allows it without asking): what it read, the events, what the person was asked."""
    events: list[Event] = []
    gate = ToolGate(default_registry(), policy or shell_policy(allow=(tool,)), context,
                    EventLog(None, "test", listener=events.append))
    sink = RecordingSink(*answers)
    outcome = await gate.run(sink, tool, arguments, "model", skill=skill, offered=[tool])
    return ShellCall(outcome.status, tool_result_text(outcome.status, outcome.text), events,
                     sink.questions, sink.notices)
