"""The kinds of event of tools and skills at work: a skill invoked or loaded, a tool
called, the person's answer, a pre-approval, a skill's file read or script run, a run
of code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from lily_kernel.events.kinds import (
    Answer,
    Caller,
    EventData,
    InvokedBy,
    RunStatus,
    ScriptOutcome,
)

__all__ = ["Approval", "CodeRun", "SkillFileRead", "SkillGrant", "SkillInvoked", "SkillLoaded",
           "SkillScriptRun", "ToolCalled"]


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
