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

from lily_kernel.commands import CommandResult, ParsedCommand, resolve
from lily_kernel.display import Notice, Text
from lily_kernel.display.notices import TrustApplied, trust_decided
from lily_kernel.events import TrustChecked, TrustedBy
from lily_kernel.runtime.approval import answer_of
from lily_kernel.runtime.core import RuntimeCore
from lily_kernel.runtime.sink import CellSink
from lily_kernel.skills import DiagnosticKind, SkillSnapshot
from lily_kernel.trust import TRUST_VARIABLE
from lily_kernel.trust.question import trust_question

__all__ = ["ask_trust", "held_skills", "log_trust_checked", "needs_trust",
           "reread_written_skills", "settle_trust", "take_up_trust", "trusted_elsewhere"]


def held_skills(snapshot: SkillSnapshot) -> dict[str, str]:
    """The held skills of a snapshot: name -> why (their `untrusted` diagnostics)."""
    return {d.skill: d.reason for d in snapshot.diagnostics
            if d.kind is DiagnosticKind.UNTRUSTED}


def _invoked(runtime: RuntimeCore, parsed: ParsedCommand) -> str | None:
    """The skill name a command cell would invoke (held ones included), or None."""
    found = resolve(parsed.name, runtime.session.skill_snapshot, runtime.env.commands)
    if found.command is not None:
        words = parsed.argument.split()
        return words[0] if found.command.names_skill and words else None
    return found.skill.name if found.skill is not None else found.wanted


def _holds_anything(runtime: RuntimeCore) -> bool:
    """Whether anything that came with the folder waits for trust: skills, lily.yaml
    settings, the persona folder, a record of turns Run All would replay."""
    trust = runtime.env.trust
    return bool(held_skills(runtime.session.skill_snapshot) or trust.held_settings
                or trust.persona_line() is not None or trust.record_line() is not None)


def needs_trust(runtime: RuntimeCore, parsed: ParsedCommand | None) -> bool:
    """Whether this cell should ask: something is held, the person has not answered this
    session, and the cell is a chat cell or invokes a held skill."""
    if runtime.state.trust_answered or runtime.env.trust.problem:
        return False  # asked already; or the store is broken (the first cell says so)
    if not _holds_anything(runtime):
        return False
    return parsed is None or _invoked(runtime, parsed) in held_skills(
        runtime.session.skill_snapshot)


async def settle_trust(runtime: RuntimeCore, sink: CellSink) -> None:
    """Before a cell: ask, and tell the person what came of it in a notice."""
    sink.show(Notice(await _decide_trust(runtime, sink)))


async def _decide_trust(runtime: RuntimeCore, sink: CellSink) -> str:
    """Ask; on yes, record the trust and take up the workspace's skills, persona and
    settings. What came of it, said once by the caller (a notice, or `/trust`'s result)."""
    from lily_kernel.events import Approval, TrustDecided  # (loaded with their first use)

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
    runtime.state.trust_answered = True
    applied = None
    if outcome == "approved":
        env.trust.trust(digests)  # a store that cannot be written: the cell's error
        applied = take_up_trust(runtime)
    return trust_decided(outcome, env.workspace, trusted, TRUST_VARIABLE, applied)


async def ask_trust(runtime: RuntimeCore, sink: CellSink) -> CommandResult:
    """`/trust`: the question again (whatever was answered before), or, with nothing to
    trust, that the workspace is trusted. What is held is read from disk too: a skill a
    run made or changed since the session's snapshot (docs/skills.md, "Trust")."""
    trust = runtime.env.trust
    if (trust.trusted() and not _holds_anything(runtime)
            and (trust.by_environment or not runtime.env.pending_trust()[1])):
        return CommandResult("trust", "This workspace is trusted", (Text(
            f"{runtime.env.workspace}: nothing that came with it is held."),))
    return CommandResult("trust", "Trust", (Text(await _decide_trust(runtime, sink)),))


def trusted_elsewhere(runtime: RuntimeCore) -> bool:
    """Whether the person trusted the workspace since the session read its trust (from a
    terminal, `lily trust`, or another notebook): then the session takes it up now."""
    trust = runtime.env.trust
    if trust.by_environment:
        return False
    if trust.trusted() and not _holds_anything(runtime):
        return False  # nothing held: nothing to take up
    return trust.entry() != trust.seen


def reread_written_skills(runtime: RuntimeCore) -> None:
    """Before a cell, after a run wrote in the workspace's skills folder: the session's
    skills read again, so a skill it made or changed is held (not offered, not usable)
    until the person trusts it at its new digest, as it would be in the next session."""
    services = runtime.services
    if not services.skills_written:
        return
    services.skills_written = False
    session = runtime.session
    session.skill_snapshot = runtime.env.load_snapshot(session.skill_snapshot.version + 1)
    runtime.log_catalog(session.skill_snapshot)


def log_trust_checked(runtime: RuntimeCore) -> None:
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


def take_up_trust(runtime: RuntimeCore) -> TrustApplied:
    """After the person trusted the workspace: the configuration with its lily.yaml whole,
    the skills no longer held, the policy, model, script time limit and Python kernel as
    it says, each from its next use. What changed that the person would not see."""
    old = runtime.env
    model, profile = runtime.session.model_config, runtime.state.policy.profile
    env = old.reread()
    runtime.take_up(env)
    session = runtime.session
    session.skill_snapshot = env.load_snapshot(session.skill_snapshot.version + 1)
    if old.persona_roots != env.persona_roots:  # the workspace's persona/ was held
        session.persona = env.load_persona(session.active_agent)
    runtime.log_catalog(session.skill_snapshot)
    ended = runtime.services.renew_python()  # the kernel it names, at the next run
    kernel = env.config.python_kernel
    return TrustApplied(
        model=session.model_config.model if session.model_config != model else None,
        python_kernel=_described(kernel) if kernel != old.config.python_kernel else None,
        kernel_ended=ended,
        profile=runtime.state.policy.profile
        if runtime.state.policy.profile != profile else None)


def _described(kernel: str | None) -> str:
    """The Python kernel named `kernel` as `/python` shows it (its name alone when Jupyter
    does not know it: the run says so)."""
    from lily_kernel.errors import ToolError
    from lily_kernel.execution.kernelspec import choose_kernel

    try:
        return choose_kernel(kernel).described()
    except ToolError:
        return str(kernel)
