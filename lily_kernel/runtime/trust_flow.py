"""Asking the person to trust the workspace: once a session, in the first cell that
needs what is held (a chat cell, or a command invoking a held skill).

The question lists what would be trusted: the lily.yaml settings not applied and a
held persona folder, then the held skills with where they come from (at most
MAX_LISTED, then how many more). Yes: the store records the workspace (its
lily.yaml and each skill at its digest) and the session takes it all up at once. No:
held for this session. No one to answer (nbclient, papermill): held, and the cell says
how to trust. Every answer is an `approval` event (tool `trust`, so replay answers it
as the person did) and a `trust_decided` event saying what it covered.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from lily_kernel.commands import CommandResult, ParsedCommand, resolve
from lily_kernel.display import Text
from lily_kernel.events import Approval, EventLog, TrustChecked, TrustDecided, TrustedBy
from lily_kernel.runtime.approval import answer_of
from lily_kernel.runtime.sink import CellSink
from lily_kernel.skills import DiagnosticKind, SkillSnapshot, load_snapshot
from lily_kernel.trust import TRUST_VARIABLE, TrustStore, WorkspaceTrust, hold_untrusted
from lily_kernel.visible import visible

if TYPE_CHECKING:
    from lily_kernel.runtime.environment import LilyEnvironment
    from lily_kernel.session import Session


class LilyRuntime(Protocol):
    """What of the runtime (runtime/runtime.py) the trust question reads and replaces."""

    env: LilyEnvironment
    session: Session
    log: EventLog
    trust_answered: bool

    def log_catalog(self, snap: SkillSnapshot) -> None: ...

    def use_environment(self, env: LilyEnvironment) -> None: ...

__all__ = ["ask_trust", "held_skills", "log_trust_checked", "needs_trust", "pending_trust",
           "settle_trust", "take_up_trust", "trust_help", "trust_question", "trusted_elsewhere"]


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


def needs_trust(runtime: LilyRuntime, parsed: ParsedCommand | None) -> bool:
    """Whether this cell should ask: something is held, the person has not answered this
    session, and the cell is a chat cell or invokes a held skill."""
    if runtime.trust_answered or runtime.env.trust.problem:
        return False  # asked already; or the store is broken (the first cell says so)
    held = held_skills(runtime.session.skill_snapshot)
    trust = runtime.env.trust
    if not held and not trust.held_settings and trust.persona_line() is None:
        return False
    return parsed is None or _invoked(runtime, parsed) in held


def trust_help(runtime: LilyRuntime) -> str:
    """How to trust this workspace (one line)."""
    return (f"run `/trust` in a cell, or `lily trust {runtime.env.workspace}` in a "
            f"terminal, or set `{TRUST_VARIABLE}=workspace` for a runner without input")


def pending_trust(env: LilyEnvironment) -> tuple[dict[str, str], list[str], list[str]]:
    """What trusting the workspace now would record (every workspace skill's digest),
    and what it would let take effect: the held skills, and the lily.yaml settings and
    the persona folder, a line each (the same lines in the notebook's question and in
    `lily trust`)."""
    from lily_kernel.runtime.environment import LilyEnvironment

    trust = env.trust
    # The skills as they would be with the lily.yaml and persona trusted: the roots the
    # file names are among them, so their skills are listed and recorded too.
    entry = trust.entry()
    trusting = TrustStore(None, {str(env.workspace): WorkspaceTrust(
        trust.config_digest, entry.skills if entry else {}, trust.persona_digest)})
    full = LilyEnvironment.load(env.workspace, env.host.environ, registry=env.registry,
                                host=env.host, trust_store=trusting, commands=env.commands)
    raw = load_snapshot(full.skill_roots, full.snapshot_rules(), full.host)
    _, digests, held = hold_untrusted(raw, env.workspace, entry,
                                      person_roots=trust.person_roots, cache=trust.digests)
    persona = trust.persona_line()
    settings = [f"lily.yaml {line}" for line in trust.held_settings]
    return digests, [h.line() for h in held], settings + (
        [f"persona {persona}"] if persona else [])


MAX_LISTED = 20  # skills a trust question names; the rest are counted


def trust_question(workspace: Path, skills: list[str], settings: list[str],
                   trusted: bool = False) -> str:
    """The question that lists what would be trusted: the settings (what they would
    change) first, then the skills, at most MAX_LISTED of them; every line as it is,
    nothing in it invisible or moving the cursor. `trusted`: the store trusts the
    workspace, and what is held was added or changed since (the question says so, not
    that the workspace is untrusted)."""
    shown = visible(str(workspace))
    if trusted:
        lines = [f"Things changed in this trusted workspace since you trusted it: {shown}",
                 "Trusting them lets them take effect:"]
    else:
        lines = [f"This workspace is not trusted: {shown}",
                 "Trusting it lets what came with the folder take effect:" if skills or settings
                 else "Nothing that came with it is held; trusting it lets the model write "
                      "files here without asking each time."]
    lines += [f"  {visible(line)}" for line in settings]
    lines += [f"  skill {visible(line)}" for line in skills[:MAX_LISTED]]
    if len(skills) > MAX_LISTED:
        lines.append(f"  and {len(skills) - MAX_LISTED:,} more skills (`/skills` lists "
                     "them)")
    lines.append("Trust what changed? [y/N]" if trusted else "Trust this workspace? [y/N]")
    return "\n".join(lines)


async def settle_trust(runtime: LilyRuntime, sink: CellSink) -> str:
    """Ask; on yes, record the trust and take up the workspace's skills, persona and
    settings. What came of it, as the notice the person is shown."""
    env = runtime.env
    digests, skills, settings = pending_trust(env)
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
    sink.notice(said)
    return said


async def ask_trust(runtime: LilyRuntime, sink: CellSink) -> CommandResult:
    """`/trust`: the question again (whatever was answered before), or, with nothing to
    trust, that the workspace is trusted."""
    trust = runtime.env.trust
    if (trust.trusted() and not held_skills(runtime.session.skill_snapshot)
            and not trust.held_settings and trust.persona_line() is None):
        return CommandResult("trust", "This workspace is trusted", (Text(
            f"{runtime.env.workspace}: nothing that came with it is held."),))
    said = await settle_trust(runtime, sink)
    return CommandResult("trust", "Trust", (Text(said),))


def trusted_elsewhere(runtime: LilyRuntime) -> bool:
    """Whether the person trusted the workspace since the session read its trust (from a
    terminal, `lily trust`, or another notebook): then the session takes it up now."""
    trust = runtime.env.trust
    if trust.by_environment:
        return False
    if (not held_skills(runtime.session.skill_snapshot) and not trust.held_settings
            and trust.persona_line() is None and trust.trusted()):
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
        held_settings=[*trust.held_settings, *filter(None, [trust.persona_line()])],
        problem=trust.problem))


def take_up_trust(runtime: LilyRuntime) -> None:
    """After the person trusted the workspace: the configuration with its lily.yaml whole,
    the skills no longer held, the policy, model and script time limit as it says."""
    from lily_kernel.runtime.environment import LilyEnvironment

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
