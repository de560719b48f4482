"""Every kind of event a session logs, declared once (events/log.py writes them).

Each kind of event is declared once below, as a frozen dataclass whose fields are the
event's data (names and types): `EventLog.emit` writes one, and replay reads them back
through the same declaration (`validation.build`, which checks every field's type). A
field a kind does not declare cannot be emitted (the dataclass refuses it, and mypy sees
every emit site). What a field may say is a type too: a `Literal` (the outcomes below) or
the enum of the layer that decides it (`ModelFault`, `DiagnosticKind`), written as its
value.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal

from lily_kernel.config import Profile
from lily_kernel.errors import ModelFault
from lily_kernel.skills.models import DiagnosticKind, SkillSnapshot

__all__ = [
    "KINDS",
    "Answer",
    "Approval",
    "CallOutcome",
    "Caller",
    "Cell",
    "CellFinished",
    "CellStatus",
    "CodeRun",
    "Command",
    "DecidedBy",
    "EventData",
    "InvokedBy",
    "LoadOutcome",
    "McpServerStarted",
    "ModelCall",
    "ModelLoad",
    "NetworkConnection",
    "NetworkDecidedBy",
    "PolicyChanged",
    "ProfileSetBy",
    "RunStatus",
    "ScriptOutcome",
    "SelectionOutcome",
    "SessionStarted",
    "SkillCatalogUpdated",
    "SkillFileRead",
    "SkillGrant",
    "SkillInvoked",
    "SkillLoaded",
    "SkillScriptRun",
    "SkillSelection",
    "SkillWarning",
    "ToolCalled",
    "TrustChecked",
    "TrustDecided",
    "TrustedBy",
    "catalog_events",
]

KINDS: dict[str, type[EventData]] = {}  # every declared kind by name, filled as declared

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
class TrustDecided(EventData):
    """The person's answer to the trust question, and what it trusted."""

    event: ClassVar[str] = "trust_decided"
    outcome: Answer
    skills: list[str]
    settings: list[str]


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


@dataclass(frozen=True, kw_only=True)
class SkillInvoked(EventData):
    event: ClassVar[str] = "skill_invoked"
    name: str
    mode: InvokedBy
    command: str | None = None


@dataclass(frozen=True, kw_only=True)
class SkillLoaded(EventData):
    event: ClassVar[str] = "skill_loaded"
    name: str
    path: str
    digest: str


@dataclass(frozen=True, kw_only=True)
class SkillSelection(EventData):
    """The skill of a request to a model without tools: the shortlist (name and score
    of its best matches), who decided (the ranker, or the model among near-equal
    matches) and why, and what came of it."""

    event: ClassVar[str] = "skill_selection"
    outcome: SelectionOutcome
    name: str | None = None
    detail: str | None = None
    reply: str = ""  # the model's declaration, when it was asked
    shortlist: list[dict[str, Any]] | None = None
    decided_by: DecidedBy | None = None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class ModelLoad(EventData):
    """A load that did not give the cell a model (failed or stopped)."""

    event: ClassVar[str] = "model_load"
    model: str | None
    outcome: LoadOutcome
    error: dict[str, str] | None = None


@dataclass(frozen=True, kw_only=True)
class ModelCall(EventData):
    event: ClassVar[str] = "model_call"
    model: str
    step: int | str
    outcome: CallOutcome
    latency_ms: float
    context_window: int | None
    supports_tools: bool
    response: dict[str, Any] | None = None  # text and tool calls
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    cost: float | None = None
    error: dict[str, str] | None = None  # kind and message


@dataclass(frozen=True, kw_only=True)
class ToolCalled(EventData):
    event: ClassVar[str] = "tool_call"
    name: str
    caller: Caller
    allowed: bool
    step: int | None = None
    arguments: dict[str, Any] | None = None
    error: str | None = None
    result: str = ""


@dataclass(frozen=True, kw_only=True)
class Approval(EventData):
    event: ClassVar[str] = "approval"
    tool: str
    question: str
    outcome: Answer


@dataclass(frozen=True, kw_only=True)
class SkillGrant(EventData):
    """A call the active skill's `allowed-tools` pre-approved: not asked, as the person
    let skills do (LILY_SKILL_PREAPPROVAL; skills/overrides.py). `digest`: the skill's
    SKILL.md as it was then."""

    event: ClassVar[str] = "skill_grant"
    skill: str
    tool: str
    digest: str


@dataclass(frozen=True, kw_only=True)
class PolicyChanged(EventData):
    """The policy profile in force: logged when the session starts with `auto`, and at
    each change (`/policy`, a lily.yaml taken up once trusted)."""

    event: ClassVar[str] = "policy_profile"
    profile: Profile
    by: ProfileSetBy


@dataclass(frozen=True, kw_only=True)
class SkillFileRead(EventData):
    event: ClassVar[str] = "skill_file_read"
    skill: str
    path: str
    sha256: str
    size: int


@dataclass(frozen=True, kw_only=True)
class SkillScriptRun(EventData):
    event: ClassVar[str] = "skill_script_run"
    skill: str
    script: str
    sha256: str
    arguments: list[str]
    sandboxed: bool
    outcome: ScriptOutcome
    exit_code: int | None = None
    duration_ms: float | None = None
    output_bytes: int | None = None
    output: str | None = None


@dataclass(frozen=True, kw_only=True)
class CodeRun(EventData):
    """One run of code in the sandbox: a `python` cell of the subkernel, a `shell`
    command line. `sha256` is the code's, `output_sha256` that of everything it showed
    (replay compares it), `status` how it ended ("error": it raised, or exited non-zero)."""

    event: ClassVar[str] = "code_run"
    tool: str  # python, shell
    caller: Caller
    code: str
    sha256: str
    status: RunStatus
    exit_code: int | None = None  # shell: the command's; python: None
    error: str | None = None  # python: the exception's name and value
    duration_ms: float | None = None
    output_sha256: str | None = None
    output_bytes: int | None = None


@dataclass(frozen=True, kw_only=True)
class McpServerStarted(EventData):
    """An MCP server's start for the session (mcp_tools/): running, with the tools it
    offers (as Lily names them), or failed, and why."""

    event: ClassVar[str] = "mcp_server"
    server: str
    transport: str
    outcome: Literal["running", "failed"]
    tools: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class NetworkConnection(EventData):
    """One connection through the session's proxy, as it ended: where it asked to go,
    what was decided and by whom (`reason`: why it was refused, or why an allowed one
    failed), the address connected to ("" when none), the bytes sent and received, and
    the tool call (and skill) that made it, where one was running. What happened, never
    a grant: replay decides again under the policy in force."""

    event: ClassVar[str] = "network"
    host: str
    port: int
    allowed: bool
    decided_by: NetworkDecidedBy
    reason: str = ""
    address: str = ""
    bytes_sent: int = 0
    bytes_received: int = 0
    tool: str | None = None
    skill: str | None = None


EVENT_KINDS: tuple[str, ...] = tuple(KINDS)  # Lily's own kinds, declared above
