"""A command's outcome, once it ran: its `command` event (what the person was shown, as a
digest), its state change applied (only when it succeeded), the skill it invoked."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from lily_kernel.commands import CommandOutcome, CommandResult, ParsedCommand
from lily_kernel.config import Profile
from lily_kernel.events import Command, EventLog, ProfileSetBy, SkillInvoked, SkillLoaded
from lily_kernel.skills import SkillSnapshot

if TYPE_CHECKING:
    from lily_kernel.session import Session

__all__ = ["finish_command"]


class LilyRuntime(Protocol):
    """What of the runtime (runtime/runtime.py) finishing a command reads and changes."""

    session: Session
    log: EventLog

    @property
    def shown(self) -> Callable[[CommandResult], str]: ...

    def log_catalog(self, snap: SkillSnapshot) -> None: ...

    def update_profile(self, by: ProfileSetBy, **change: Profile) -> None: ...


def finish_command(runtime: LilyRuntime, parsed: ParsedCommand,
                   outcome: CommandOutcome) -> CommandResult:
    """Log a command's outcome and apply its state change (only when it succeeded)."""
    result = outcome.result
    # What the person was shown, as a digest: replay compares it without the log
    # holding every listing.
    shown = runtime.shown(result) if result.ok and result.invocation is None else ""
    runtime.log.emit(Command(
        name=parsed.name, argument=parsed.argument, ok=result.ok, error=result.error,
        output_sha256=hashlib.sha256(shown.encode()).hexdigest() if shown else None,
        output_chars=len(shown) if shown else None))
    if not result.ok:
        return result
    change = outcome.change
    if change is not None:
        change.apply(runtime.session)
        if change.policy is not None:
            runtime.update_profile("command", chosen=change.policy)
        if change.skill_snapshot is not None:
            runtime.log_catalog(change.skill_snapshot)
    if result.skill is not None:
        skill = runtime.session.skill_snapshot.get(result.skill)
        runtime.log.emit(SkillInvoked(name=result.skill, mode="manual", command=result.command))
        if skill is not None and skill.invocation_mode == "prompt_rewrite":
            runtime.log.emit(SkillLoaded(name=skill.name, path=skill.path, digest=skill.digest))
    return result
