"""Asking the person to trust the workspace: once a session, in the first cell that
needs what is held (a chat cell, or a command invoking a held skill).

The question lists what would be trusted: the held skills with where they come from,
and the lily.yaml settings not applied. Yes: the store records the workspace (its
lily.yaml and each skill at its digest) and the session takes it all up at once. No:
held for this session. No one to answer (nbclient, papermill): held, and the cell says
how to trust. Every answer is an `approval` event (tool `trust`, so replay answers it
as the person did) and a `trust_decided` event saying what it covered.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from lily_kernel.commands import ParsedCommand
from lily_kernel.events import Approval, EventLog, TrustChecked, TrustDecided
from lily_kernel.runtime.approval import YES
from lily_kernel.runtime.sink import CellSink
from lily_kernel.skills import DiagnosticKind, SkillSnapshot, load_snapshot
from lily_kernel.trust import TRUST_VARIABLE, hold_untrusted

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

__all__ = ["held_skills", "log_trust_checked", "needs_trust", "pending_trust", "settle_trust",
           "take_up_trust", "trust_help", "trust_question"]


def held_skills(snapshot: SkillSnapshot) -> dict[str, str]:
    """The held skills of a snapshot: name -> why (their `untrusted` diagnostics)."""
    return {d.skill: d.reason for d in snapshot.diagnostics
            if d.kind is DiagnosticKind.UNTRUSTED}


def _invoked(parsed: ParsedCommand) -> set[str]:
    """The skill names a command cell could invoke."""
    names = {parsed.name, parsed.name.removeprefix("skill:")}
    if parsed.name == "skill" and parsed.argument.split():
        names.add(parsed.argument.split()[0])
    return names


def needs_trust(runtime: LilyRuntime, parsed: ParsedCommand | None) -> bool:
    """Whether this cell should ask: something is held, the person has not answered this
    session, and the cell is a chat cell or invokes a held skill."""
    if runtime.trust_answered or runtime.env.trust.problem:
        return False  # asked already; or the store is broken (the first cell says so)
    held = held_skills(runtime.session.skill_snapshot)
    if not held and not runtime.env.trust.held_settings:
        return False
    return parsed is None or bool(_invoked(parsed) & held.keys())


def trust_help(runtime: LilyRuntime) -> str:
    """How to trust this workspace outside the notebook (one line)."""
    return (f"run `lily trust {runtime.env.workspace}` in a terminal, or set "
            f"{TRUST_VARIABLE}=workspace for a runner without input")


def pending_trust(env: LilyEnvironment) -> tuple[dict[str, str], list[str], list[str]]:
    """What trusting the workspace now would record (every workspace skill's digest),
    and what it would let take effect: the held skills and lily.yaml settings, a line
    each (the same lines in the notebook's question and in `lily trust`)."""
    raw = load_snapshot(env.skill_roots, env.snapshot_rules(), env.host)
    _, digests, held = hold_untrusted(raw, env.workspace, env.trust.entry())
    return digests, [h.line() for h in held], list(env.trust.held_settings)


def trust_question(workspace: Path, skills: list[str], settings: list[str]) -> str:
    """The question that lists what would be trusted."""
    lines = [f"This workspace is not trusted: {workspace}",
             "Trusting it lets what came with the folder take effect:"]
    lines += [f"  skill {line}" for line in skills]
    lines += [f"  lily.yaml {line}" for line in settings]
    lines.append("Trust this workspace? [y/N]")
    return "\n".join(lines)


async def settle_trust(runtime: LilyRuntime, sink: CellSink) -> None:
    """Ask once; on yes, record the trust and take up the workspace's skills and settings."""
    env = runtime.env
    digests, skills, settings = pending_trust(env)
    question = trust_question(env.workspace, skills, settings)
    try:
        answer = await sink.ask(question)
    except asyncio.CancelledError:
        runtime.log.emit(Approval(tool="trust", question=question, outcome="interrupted"))
        raise
    outcome = ("unanswerable" if answer is None else
               "approved" if answer.strip().lower() in YES else "declined")
    runtime.log.emit(Approval(tool="trust", question=question, outcome=outcome))
    runtime.log.emit(TrustDecided(outcome=outcome, skills=skills, settings=settings))
    runtime.trust_answered = True
    if outcome == "approved":
        env.trust.trust(digests)  # a store that cannot be written: the cell's error
        take_up_trust(runtime)
        sink.notice(f"Trusted {env.workspace}: its skills and lily.yaml apply.")
    elif outcome == "declined":
        sink.notice("Held for this session: the workspace's skills and lily.yaml settings "
                    f"listed above. To trust it later, {trust_help(runtime)}.")
    else:
        sink.notice(f"This workspace is not trusted, so its skills and some lily.yaml "
                    f"settings are held (`/skills` lists them). To trust it, "
                    f"{trust_help(runtime)}.")


def log_trust_checked(runtime: LilyRuntime) -> None:
    """Log the workspace's trust as a session starts: what the store trusts, what is
    held (replay starts from it)."""
    env = runtime.env
    trust = env.trust
    entry = None if trust.by_environment else trust.entry()
    held = trust.held  # what the session's first snapshot held: no second build
    by = "environment" if trust.by_environment else "store" if entry is not None else "none"
    runtime.log.emit(TrustChecked(
        by=by, trusted_skills=dict(entry.skills) if entry else {},
        config_trusted=not trust.held_settings, held_skills=[h.line() for h in held],
        held_settings=list(trust.held_settings), problem=trust.problem))


def take_up_trust(runtime: LilyRuntime) -> None:
    """After the person trusted the workspace: the configuration with its lily.yaml whole,
    the skills no longer held, the policy, model and script time limit as it says."""
    from lily_kernel.runtime.environment import LilyEnvironment

    old = runtime.env
    env = LilyEnvironment.load(old.workspace, old.host.environ, registry=old.registry,
                               host=old.host, trust_store=old.trust.store)
    runtime.use_environment(env)
    session = runtime.session
    session.skill_snapshot = env.load_snapshot(session.skill_snapshot.version + 1)
    runtime.log_catalog(session.skill_snapshot)
