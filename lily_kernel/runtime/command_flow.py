"""A command cell's path through the runtime: what the command may use, and after it
ran, its event and its state change (applied only when it succeeded)."""

from __future__ import annotations

import hashlib
import threading
from typing import TYPE_CHECKING, Any, Protocol

from lily_kernel.commands import CommandContext, CommandOutcome, CommandResult, ParsedCommand
from lily_kernel.config import Profile
from lily_kernel.events import Command, ProfileSetBy, SkillInvoked, SkillLoaded
from lily_kernel.runtime.mcp_flow import mcp_overview
from lily_kernel.runtime.sink import CellSink
from lily_kernel.runtime.trust_flow import ask_trust
from lily_kernel.tools import PolicyState, ToolOutcome

if TYPE_CHECKING:
    from lily_kernel.environment import LilyEnvironment
    from lily_kernel.events import EventLog
    from lily_kernel.execution.python_host import PythonHost
    from lily_kernel.mcp_tools.session import McpOverview, McpServers
    from lily_kernel.runtime.collaborators import Collaborators, SessionRecord, TurnFacts
    from lily_kernel.runtime.tool_gate import ToolGate
    from lily_kernel.session import Session
    from lily_kernel.skills import SkillSnapshot


class LilyRuntime(Protocol):
    """What of the runtime (runtime/runtime.py) a command cell uses."""

    env: LilyEnvironment
    session: Session
    log: EventLog
    collaborators: Collaborators
    python: PythonHost
    trust_answered: bool
    policy_state: PolicyState
    record: SessionRecord | None
    last_turn: tuple[TurnFacts, int] | None

    @property
    def gate(self) -> ToolGate: ...

    @property
    def mcp(self) -> McpServers: ...

    def log_catalog(self, snap: SkillSnapshot) -> None: ...

    def use_environment(self, env: LilyEnvironment) -> None: ...

    def update_profile(self, by: ProfileSetBy, **change: Profile) -> None: ...

__all__ = ["command_context", "finish_command"]


def command_context(runtime: LilyRuntime, stop: threading.Event | None = None,
                    sink: CellSink | None = None) -> CommandContext:
    """What a command may use; with the cell's `sink`, the trust question and the
    session's tools run as the person's (through the one gate) too."""
    env = runtime.env

    async def trust() -> CommandResult:
        assert sink is not None
        return await ask_trust(runtime, sink)

    async def run_tool(name: str, arguments: dict[str, Any]) -> ToolOutcome:
        assert sink is not None
        return await runtime.gate.run(sink, name, arguments, "owner")

    async def mcp() -> McpOverview:
        assert sink is not None
        return await mcp_overview(runtime, sink)

    return CommandContext(
        session=runtime.session,
        commands=env.commands,
        registry=env.registry,
        policy=env.policy.under(runtime.policy_state),
        load_snapshot=env.load_snapshot,
        load_persona=env.load_persona,
        list_agents=env.list_agents,
        held_settings=env.trust.held_settings,
        stop=stop,
        trust=trust if sink is not None else None,
        run_tool=run_tool if sink is not None else None,
        python=runtime.python,
        mcp=mcp if sink is not None else None,
        conversations=runtime.record,
        last_request=runtime.last_turn[0].text if runtime.last_turn is not None else None,
    )


def finish_command(runtime: LilyRuntime, parsed: ParsedCommand,
                   outcome: CommandOutcome) -> CommandResult:
    """Log a command's outcome and apply its state change (only when it succeeded)."""
    result, session, log = outcome.result, runtime.session, runtime.log
    # What the person was shown, as a digest: replay compares it without the log
    # holding every listing.
    shown = (runtime.collaborators.shown(result) if result.ok and result.invocation is None
             and result.ask_again is None else "")
    log.emit(Command(
        name=parsed.name, argument=parsed.argument, ok=result.ok, error=result.error,
        output_sha256=hashlib.sha256(shown.encode()).hexdigest() if shown else None,
        output_chars=len(shown) if shown else None))
    if not result.ok:
        return result
    if outcome.change is not None:
        outcome.change.apply(session)
        if outcome.change.policy is not None:
            runtime.update_profile("command", chosen=outcome.change.policy)
        if outcome.change.skill_snapshot is not None:
            runtime.log_catalog(outcome.change.skill_snapshot)
        if outcome.change.conversation is not None:  # /new, /resume
            runtime.last_turn = None
            if runtime.record is not None:
                runtime.record.started(outcome.change.conversation)
    if result.skill is not None:
        skill = session.skill_snapshot.get(result.skill)
        log.emit(SkillInvoked(name=result.skill, mode="manual", command=result.command))
        if skill is not None and skill.invocation_mode == "prompt_rewrite":
            log.emit(SkillLoaded(name=skill.name, path=skill.path, digest=skill.digest))
    return result
