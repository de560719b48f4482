"""Asking the person to trust the workspace: once a session, in the first cell that
needs what is held (a chat cell, or a command invoking a held skill).

The question (trust/question.py) lists what would be trusted: the lily.yaml settings not
applied, a held persona folder and the folder's record of turns (Run All would replay
it), then the held skills with where they come from. Yes:
the store records the workspace (its lily.yaml and each skill at its digest) and the
session takes it all up at once. No:
held for this session. No one to answer (nbclient, papermill): held, and the cell says
how to trust. Every answer is an `approval` event (tool `trust`, so replay answers it
as the person did) and a `trust_decided` event saying what it covered.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

from lily_kernel.commands import CommandResult, ParsedCommand, resolve
from lily_kernel.display import Text
from lily_kernel.environment import LilyEnvironment
from lily_kernel.events import Approval, EventLog, TrustChecked, TrustDecided, TrustedBy
from lily_kernel.runtime.approval import answer_of
from lily_kernel.runtime.sink import CellSink
from lily_kernel.skills import DiagnosticKind, SkillSnapshot
from lily_kernel.trust import TRUST_VARIABLE
from lily_kernel.trust.question import trust_question

if TYPE_CHECKING:
    from lily_kernel.session import Session


class LilyRuntime(Protocol):
    """What of the runtime (runtime/runtime.py) the trust question reads and replaces."""

    env: LilyEnvironment
    session: Session
    log: EventLog
    trust_answered: bool

    def log_catalog(self, snap: SkillSnapshot) -> None: ...

    def use_environment(self, env: LilyEnvironment) -> None: ...

__all__ = ["ask_trust", "held_skills", "log_trust_checked", "needs_trust",
           "settle_trust", "take_up_trust", "trust_help", "trusted_elsewhere"]


def held_skills(snapshot: SkillSnapshot) -> dict[str, str]:
    """The held skills of a snapshot: name -> why (their `untrusted` diagnostics)."""
    return {d.skill: d.reason for d in snapshot.diagnostics
            if d.kind is DiagnosticKind.UNTRUSTED}


def _invoked(runtime: LilyRuntime, parsed: ParsedCommand) -> str | None:
    """The skill name a command cell would invoke (held ones included), or None."""
    found = resolve(parsed.name, runtime.session.skill_snapshot, runtime.env.commands)
    if found.command is not None:
        words = parsed.argument.split()
        return words[0] if found.command.names_skill and words else None
    return found.skill.name if found.skill is not None else found.wanted


def _holds_anything(runtime: LilyRuntime) -> bool:
    """Whether anything that came with the folder waits for trust: skills, lily.yaml
    settings, the persona folder, a record of turns Run All would replay."""
    trust = runtime.env.trust
    return bool(held_skills(runtime.session.skill_snapshot) or trust.held_settings
                or trust.persona_line() is not None or trust.record_line() is not None)


def needs_trust(runtime: LilyRuntime, parsed: ParsedCommand | None) -> bool:
    """Whether this cell should ask: something is held, the person has not answered this
    session, and the cell is a chat cell or invokes a held skill."""
    if runtime.trust_answered or runtime.env.trust.problem:
        return False  # asked already; or the store is broken (the first cell says so)
    if not _holds_anything(runtime):
        return False
    return parsed is None or _invoked(runtime, parsed) in held_skills(
        runtime.session.skill_snapshot)


def trust_help(runtime: LilyRuntime) -> str:
    """How to trust this workspace (one line)."""
    return (f"run `/trust` in a cell, or `lily trust {runtime.env.workspace}` in a "
            f"terminal, or set `{TRUST_VARIABLE}=workspace` for a runner without input")


async def settle_trust(runtime: LilyRuntime, sink: CellSink) -> None:
    """Before a cell: ask, and tell the person what came of it in a notice."""
    sink.notice(await _decide_trust(runtime, sink))


async def _decide_trust(runtime: LilyRuntime, sink: CellSink) -> str:
    """Ask; on yes, record the trust and take up the workspace's skills, persona and
    settings. What came of it, said once by the caller (a notice, or `/trust`'s result)."""
    env = runtime.env
    digests, skills, settings = env.pending_trust()
    trusted = env.trust.entry() is not None  # only what changed since is held
    question = trust_question(env.workspace, skills, settings, trusted)
    try:
        answer = await sink.ask(question)
    except asyncio.CancelledError:
        runtime.log.emit(Approval(tool="trust", question=question, outcome="interrupted"))
        raise
    outcome = answer_of(answer)
    runtime.log.emit(Approval(tool="trust", question=question, outcome=outcome))
    runtime.log.emit(TrustDecided(outcome=outcome, skills=skills, settings=settings))
    runtime.trust_answered = True
    if outcome == "approved":
        env.trust.trust(digests)  # a store that cannot be written: the cell's error
        take_up_trust(runtime)
        said = f"Trusted {env.workspace}: its skills, persona and lily.yaml apply."
    elif outcome == "declined":
        said = ("Held for this session: what the question listed. To trust it later, "
                f"{trust_help(runtime)}.")
    elif trusted:
        said = (f"What changed in this workspace since you trusted it is held (`/skills` "
                f"lists it). To trust it, {trust_help(runtime)}.")
    else:
        said = (f"This workspace is not trusted, so what came with it is held (`/skills` "
                f"lists the skills). To trust it, {trust_help(runtime)}.")
    return said


async def ask_trust(runtime: LilyRuntime, sink: CellSink) -> CommandResult:
    """`/trust`: the question again (whatever was answered before), or, with nothing to
    trust, that the workspace is trusted."""
    if runtime.env.trust.trusted() and not _holds_anything(runtime):
        return CommandResult("trust", "This workspace is trusted", (Text(
            f"{runtime.env.workspace}: nothing that came with it is held."),))
    return CommandResult("trust", "Trust", (Text(await _decide_trust(runtime, sink)),))


def trusted_elsewhere(runtime: LilyRuntime) -> bool:
    """Whether the person trusted the workspace since the session read its trust (from a
    terminal, `lily trust`, or another notebook): then the session takes it up now."""
    trust = runtime.env.trust
    if trust.by_environment:
        return False
    if trust.trusted() and not _holds_anything(runtime):
        return False  # nothing held: nothing to take up
    return trust.entry() != trust.seen


def log_trust_checked(runtime: LilyRuntime) -> None:
    """Log the workspace's trust as a session starts: what the store trusts, what is
    held (replay starts from it)."""
    env = runtime.env
    trust = env.trust
    entry = None if trust.by_environment else trust.entry()
    held = trust.held  # what the session's first snapshot held: no second build
    by: TrustedBy = ("environment" if trust.by_environment else
                     "store" if entry is not None else "none")
    runtime.log.emit(TrustChecked(
        by=by, trusted_skills=dict(entry.skills) if entry else {},
        config_trusted=not trust.held_settings, held_skills=[h.line() for h in held],
        held_settings=[*trust.held_settings,
                       *filter(None, [trust.persona_line(), trust.record_line()])],
        problem=trust.problem))


def take_up_trust(runtime: LilyRuntime) -> None:
    """After the person trusted the workspace: the configuration with its lily.yaml whole,
    the skills no longer held, the policy, model and script time limit as it says."""
    old = runtime.env
    env = LilyEnvironment.load(old.workspace, old.host.environ, registry=old.registry,
                               host=old.host, trust_store=old.trust.store,
                               commands=old.commands)
    runtime.use_environment(env)
    session = runtime.session
    session.skill_snapshot = env.load_snapshot(session.skill_snapshot.version + 1)
    if old.persona_roots != env.persona_roots:  # the workspace's persona/ was held
        session.persona = env.load_persona(session.active_agent)
    runtime.log_catalog(session.skill_snapshot)
