"""Every kind of event a session logs, declared once (events/log.py writes them).

Each kind of event is declared once, as a frozen dataclass whose fields are the event's
data (names and types): `EventLog.emit` writes one, and replay reads them back through
the same declaration (`validation.build`, which checks every field's type). A field a
kind does not declare cannot be emitted (the dataclass refuses it, and mypy sees every
emit site). What a field may say is a type too: a `Literal` (the outcomes below) or the
enum of the layer that decides it (`ModelFault`, `DiagnosticKind`), written as its value.

Here: the base, what the fields may say, and the kinds every session logs from its start
to its first cell's end. The others load with their first use (the package's namespace
imports them when one is named; each class costs its compile at import): a model's
(model_kinds.py), a tool's or a skill's at work (tool_kinds.py), a change to the
session (change_kinds.py), the record's (turns.py).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal

from lily_kernel.errors import ModelFault
from lily_kernel.skills.models import DiagnosticKind, SkillSnapshot

__all__ = [
    "KINDS",
    "Answer",
    "CallOutcome",
    "Caller",
    "Cell",
    "CellFinished",
    "CellStatus",
    "Command",
    "DecidedBy",
    "EventData",
    "InvokedBy",
    "LoadOutcome",
    "NetworkDecidedBy",
    "ProfileSetBy",
    "RunStatus",
    "ScriptOutcome",
    "SelectionOutcome",
    "SessionStarted",
    "SkillCatalogUpdated",
    "SkillWarning",
    "TrustChecked",
    "TrustedBy",
    "catalog_events",
]

# Every declared kind by name, filled as declared: complete once every module of kinds
# is loaded (`lily_kernel.events.KINDS` loads them).
KINDS: dict[str, type[EventData]] = {}

# What the fields below may say (the enums of other layers aside).
CellStatus = Literal["ok", "error", "interrupted"]
# The person's answer to a question (a tool call's, or the trust question): yes, yes for
# the rest of the session (`a`, where offered), no, no one to ask (nbclient, papermill),
# or the stop button while it waited.
Answer = Literal["approved", "always", "declined", "unanswerable", "interrupted"]
TrustedBy = Literal["store", "environment", "none"]  # `environment`: LILY_TRUST
InvokedBy = Literal["manual", "auto"]  # the person, or the model
Caller = Literal["model", "owner"]  # who called a tool: the model, or a tool_dispatch command
ScriptOutcome = Literal["ran", "timeout", "interrupted"]
# How a run of code ended: as it should, raising or exiting non-zero, past its time limit,
# stopped by the person, stopped for its output (a Python run's: past the limit of a run).
RunStatus = Literal["ok", "error", "timeout", "interrupted", "output_limit"]
# What came of a skill selection: a skill; none; a reply naming no listed skill (unknown)
# or choosing nothing readable (malformed); a skill whose SKILL.md would not fit the
# model's context window (too_long).
SelectionOutcome = Literal["selected", "none", "unknown", "malformed", "too_long"]
DecidedBy = Literal["ranker", "model"]  # the shortlist's best match, or the model among several
CallOutcome = Literal["ok", "cancelled", "error"] | ModelFault  # error: a bug in Lily
LoadOutcome = ModelFault | Literal["interrupted"]  # a load that gave the cell no model
# Who decided a connection through the session's proxy (network/): network.allow, deny or
# full auto (`policy`), the person's answer to it (`person`), an answer given earlier in
# the run or the session (`session`), the proxy for the address a name resolved to
# (`refused-address`), or no one, as no one could be asked (`no-answer`).
NetworkDecidedBy = Literal["policy", "person", "session", "refused-address", "no-answer"]
# Who set the policy profile: the person's configuration (LILY_POLICY, a trusted
# lily.yaml), or `/policy` in the notebook.
ProfileSetBy = Literal["configuration", "command"]


@dataclass(frozen=True, kw_only=True)
class EventData:
    """The data of one kind of event; `event` is its name in the log."""

    event: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Every declared kind is known by its name (a tool may declare its own).
        super().__init_subclass__(**kwargs)
        if cls.event:
            KINDS[cls.event] = cls

    def as_data(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, kw_only=True)
class SessionStarted(EventData):
    event: ClassVar[str] = "session_started"
    workspace: str
    agent: str
    model: str | None
    persona_files: list[str]
    settings: dict[str, str]  # the session's LILY_* variables (none credential-like)


@dataclass(frozen=True, kw_only=True)
class SkillCatalogUpdated(EventData):
    event: ClassVar[str] = "skill_catalog_updated"
    version: int
    count: int
    roots: list[dict[str, Any]]  # source, path, exists
    digest: str
    shadowed: list[str]


@dataclass(frozen=True, kw_only=True)
class TrustChecked(EventData):
    """The workspace's trust as the session starts (replay starts from it)."""

    event: ClassVar[str] = "trust_checked"
    by: TrustedBy
    trusted_skills: dict[str, str]  # skill folder (in the workspace) -> trusted digest
    config_trusted: bool  # lily.yaml (if any) applies whole
    held_skills: list[str]  # "name (folder, new|changed)"
    held_settings: list[str]  # lily.yaml settings not applied
    problem: str | None = None  # the trust store could not be read


@dataclass(frozen=True, kw_only=True)
class SkillWarning(EventData):
    """One diagnostic of a snapshot, with the keys `lily skills --json` gives it."""

    event: ClassVar[str] = "skill_warning"
    kind: DiagnosticKind
    skill: str
    source: str
    path: str
    reason: str


def catalog_events(snap: SkillSnapshot) -> list[EventData]:
    """What the log says of a new snapshot: the catalog, then each diagnostic."""
    shadowed = [d.skill for d in snap.diagnostics if d.kind is DiagnosticKind.SHADOWED]
    roots = [{"source": r.source, "path": r.path, "exists": r.exists} for r in snap.roots]
    catalog = SkillCatalogUpdated(version=snap.version, count=len(snap.skills), roots=roots,
                                  digest=snap.digest, shadowed=shadowed)
    return [catalog, *(SkillWarning(kind=d.kind, skill=d.skill, source=d.source, path=d.path,
                                    reason=d.reason) for d in snap.diagnostics)]


@dataclass(frozen=True, kw_only=True)
class Cell(EventData):
    event: ClassVar[str] = "cell"
    code: str
    # The front end's name for the cell (JupyterLab: the cell's id in the notebook; VS
    # Code: a URI naming the notebook too), when it sent one.
    cell_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class CellFinished(EventData):
    event: ClassVar[str] = "cell_finished"
    status: CellStatus
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class Command(EventData):
    event: ClassVar[str] = "command"
    name: str
    argument: str
    ok: bool
    error: str | None = None
    # What the person was shown, as a digest: replay compares it without the log
    # holding every listing.
    output_sha256: str | None = None
    output_chars: int | None = None
