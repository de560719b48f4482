"""A command cell's path through the runtime: what the command may read, then its intent
carried out (the one place a command's side effect happens), its event and its state
change (applied only when it succeeded)."""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from typing import assert_never

from lily_kernel.commands import (
    AskAgain,
    AskTrust,
    CommandContext,
    CommandOutcome,
    CommandResult,
    ParsedCommand,
    RestartPython,
    RunPython,
    ShowMcp,
    SkillInvocation,
    ToolDispatch,
)
from lily_kernel.commands.mcp import mcp_result
from lily_kernel.commands.python import python_ran
from lily_kernel.errors import CommandError
from lily_kernel.events import Command
from lily_kernel.runtime.collaborators import TurnFacts
from lily_kernel.runtime.conversation import ask_again, converse
from lily_kernel.runtime.core import RuntimeCore
from lily_kernel.runtime.mcp_flow import mcp_overview
from lily_kernel.runtime.sink import CellSink
from lily_kernel.runtime.trust_flow import ask_trust

__all__ = ["CommandCell", "carry_out", "command_context", "finish_command"]


@dataclass(frozen=True)
class CommandCell:
    """The cell a command runs in: its code and id, where it shows, its stop."""

    code: str
    cell_id: str | None
    sink: CellSink
    stop: threading.Event


def command_context(runtime: RuntimeCore, stop: threading.Event | None = None, *,
                    in_cell: bool = False) -> CommandContext:
    """What a command may read of the session."""
    env, state = runtime.env, runtime.state
    return CommandContext(
        session=state.session,
        workspace=env,
        policy=env.policy.under(state.policy),
        stop=stop,
        in_cell=in_cell,
        python=lambda: runtime.services.python,
        conversations=runtime.record,
        last_request=state.last_turn[0].text if state.last_turn is not None else None,
        network=lambda: runtime.services.network.overview(),
    )


async def carry_out(runtime: RuntimeCore, parsed: ParsedCommand, outcome: CommandOutcome,
                    cell: CommandCell | None) -> CommandResult:
    """Do what the command's intent asks, then log and apply its outcome. A turn it asks
    for (a forced skill, /rerun) runs after its event; outside a cell (`cell` None, a
    script's run_command) it is returned, not run."""
    intent = outcome.result.intent
    if isinstance(intent, SkillInvocation | AskAgain):
        result = finish_command(runtime, parsed, outcome)
        if cell is not None and result.ok:
            await _turn(runtime, intent, cell)
        return result
    if isinstance(intent, RestartPython):
        runtime.services.python.close()
    elif intent is not None:  # the rest needs the cell's person (commands check in_cell)
        if cell is None:
            raise CommandError(f"/{parsed.name} runs a tool: run it in a cell (run_cell).")
        sink, gate = cell.sink, runtime.services.gate
        if isinstance(intent, ToolDispatch):
            outcome = await gate.dispatch(sink, parsed.name, intent, outcome)
        elif isinstance(intent, AskTrust):
            outcome = CommandOutcome(await ask_trust(runtime, sink))
        elif isinstance(intent, ShowMcp):
            outcome = CommandOutcome(mcp_result(await mcp_overview(runtime, sink)))
        elif isinstance(intent, RunPython):
            ran = await gate.run(sink, "python", {"code": intent.code}, "owner")
            try:
                outcome = CommandOutcome(python_ran(ran))
            except CommandError as exc:
                outcome = CommandOutcome(CommandResult(parsed.name, error=str(exc)))
        else:  # a new intent is carried out here (mypy: every kind of Intent is)
            assert_never(intent)
    return finish_command(runtime, parsed, outcome)


async def _turn(runtime: RuntimeCore, intent: SkillInvocation | AskAgain,
                cell: CommandCell) -> None:
    """The chat turn a command asked for: the model with a skill forced, or /rerun's."""
    if isinstance(intent, AskAgain):
        await ask_again(runtime, intent, cell.code, cell.cell_id, cell.sink, cell.stop)
        return
    forced = runtime.session.skill_snapshot.get(intent.skill)
    assert forced is not None  # the command found it in this very snapshot
    await converse(runtime, TurnFacts(intent.request, forced.name, cell.code, cell.cell_id),
                   forced, cell.sink, cell.stop)


def finish_command(runtime: RuntimeCore, parsed: ParsedCommand,
                   outcome: CommandOutcome) -> CommandResult:
    """Log a command's outcome and apply its state change (only when it succeeded)."""
    result, session, log = outcome.result, runtime.session, runtime.log
    # What the person was shown, as a digest: replay compares it without the log
    # holding every listing.
    turn = isinstance(result.intent, SkillInvocation | AskAgain)
    shown = runtime.collaborators.shown(result) if result.ok and not turn else ""
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
        from lily_kernel.events import SkillInvoked, SkillLoaded  # (loaded with their first use)

        skill = session.skill_snapshot.get(result.skill)
        log.emit(SkillInvoked(name=result.skill, mode="manual", command=result.command))
        if skill is not None and skill.invocation_mode == "prompt_rewrite":
            log.emit(SkillLoaded(name=skill.name, path=skill.path, digest=skill.digest))
    return result
