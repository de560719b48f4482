"""The session as three values (runtime/core.py): the services read their settings from
the workspace in force, so taking up a new one is one assignment; and a command's side
effects are intents the runtime carries out in one place (runtime/command_flow.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lily_kernel.commands import (
    AskTrust,
    RestartPython,
    RunPython,
    ShowMcp,
    parse_command,
    run_command,
)
from lily_kernel.commands.mcp import NONE
from lily_kernel.display import render_plain
from lily_kernel.environment import Workspace
from lily_kernel.events import Event
from lily_kernel.execution.limits import Limits
from lily_kernel.runtime import LilyRuntime
from lily_kernel.runtime.command_flow import command_context
from tests.conftest import skill_text, write_skill
from tests.support.sink import RecordingSink

HELD = "memory_limit_mb: 8192\nscript_env: [PROJECT_ROOT]\npython_timeout: 90\n"


def _untrusted(workspace: Path, environ: dict[str, str],
               events: list[Event] | None = None) -> LilyRuntime:
    (workspace / "lily.yaml").write_text(HELD)
    write_skill(workspace / "skills", "report", skill_text("Write the weekly report"))
    return LilyRuntime.start(workspace, {**environ, "LILY_TRUST": ""},
                             listener=events.append if events is not None else None)


def test_a_new_workspace_reaches_the_hosts_by_one_assignment(
        workspace: Path, environ: dict[str, str]) -> None:
    runtime = _untrusted(workspace, environ)
    services = runtime.services
    python, scripts = services.python, services.scripts
    assert (python.limits.memory_mb, python.allowed_env) == (4096, ())  # held
    gate = services.gate
    trusted = Workspace.load(workspace, environ)  # the same folder, trusted (LILY_TRUST)
    runtime.env = trusted  # the one assignment: nothing copied into the hosts
    assert services.python is python and services.scripts is scripts  # the same hosts
    assert (python.timeout, python.allowed_env, python.limits) == (
        90, ("PROJECT_ROOT",), Limits(memory_mb=8192))
    assert (scripts.limits, scripts.allowed_env) == (Limits(memory_mb=8192), ("PROJECT_ROOT",))
    assert scripts.timeout == trusted.config.script_timeout
    assert services.gate is not gate and services.gate.configured is trusted.policy
    runtime.close()


def test_the_hosts_are_made_on_first_use(workspace: Path, environ: dict[str, str]) -> None:
    runtime = LilyRuntime.start(workspace, environ)
    runtime.run_command(parse_command("/help"))  # type: ignore[arg-type]
    asyncio.run(runtime.run_cell("/python", RecordingSink()))  # describes it: made now
    assert "python" in runtime.services.__dict__ and "mcp" not in runtime.services.__dict__
    runtime.close()


@pytest.mark.parametrize(("code", "intent"), [
    ("/trust", AskTrust()), ("/mcp", ShowMcp()), ("/python restart", RestartPython()),
    ("/python print(1)", RunPython("print(1)"))])
def test_a_command_hands_its_side_effect_over(workspace: Path, environ: dict[str, str],
                                              code: str, intent: object) -> None:
    """The handler only returns the intent: nothing is asked, started, run or ended."""
    events: list[Event] = []
    runtime = _untrusted(workspace, environ, events)
    parsed = parse_command(code)
    assert parsed is not None
    before = len(events)
    outcome = asyncio.run(run_command(command_context(runtime, in_cell=True), parsed))
    assert outcome.result.intent == intent
    assert events[before:] == [] and not runtime.state.trust_answered
    assert "mcp" not in runtime.services.__dict__
    runtime.close()


def test_the_runtime_carries_the_trust_intent_out(workspace: Path,
                                                  environ: dict[str, str]) -> None:
    events: list[Event] = []
    runtime = _untrusted(workspace, environ, events)
    held = runtime.services.python
    sink = RecordingSink("y")
    asyncio.run(runtime.run_cell("/trust", sink))
    [question] = sink.questions
    assert "skill report" in question
    kinds = [e.event for e in events]
    # Asked, then the command's event: replay meets them in this order.
    assert kinds.index("trust_decided") < len(kinds) - 1 - kinds[::-1].index("command")
    [shown] = sink.shown
    assert "Trusted" in render_plain(shown)  # type: ignore[arg-type]
    assert runtime.state.trust_answered and runtime.env.trust.trusted()
    assert held.limits.memory_mb == 8192  # the taken-up workspace, read by the same host
    runtime.close()


def test_the_runtime_carries_the_other_intents_out(workspace: Path,
                                                   environ: dict[str, str]) -> None:
    runtime = LilyRuntime.start(workspace, environ)
    sink = RecordingSink()
    asyncio.run(runtime.run_cell("/mcp", sink))
    asyncio.run(runtime.run_cell("/python restart", sink))
    mcp, restart = (render_plain(s) for s in sink.shown)  # type: ignore[arg-type]
    assert NONE in mcp and "No Python kernel was running" in restart
    outside = runtime.run_command(parse_command("/trust"))  # type: ignore[arg-type]
    assert outside.error is not None and "lily trust" in outside.error
    runtime.close()
