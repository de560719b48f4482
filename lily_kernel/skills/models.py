"""The values the skills package produces: Skill, Diagnostic, SkillRoot, SkillSnapshot.

They are frozen dataclasses: building 1,000 of them per load must be cheap (see
docs/benchmarks.md). A Skill keeps its validated `Frontmatter` whole rather than copying
its keys; only what the loader derives (one-line summary, merged eligibility, parsed
`allowed-tools`, the alias after collisions) is a field of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from lily_kernel.skills.fields import (
    Frontmatter,
    InvocationMode,
    parse_allowed_tools,
    shell_commands,
    tool_names_of_entries,
)

__all__ = [
    "AliasChange",
    "Diagnostic",
    "DiagnosticKind",
    "Eligibility",
    "InvocationMode",
    "Skill",
    "SkillRoot",
    "SkillSnapshot",
    "SkillSource",
    "SnapshotDiff",
    "diff_snapshots",
]

# `project`: a folder above the workspace in its repository (skills/roots.py).
SkillSource = Literal["workspace", "project", "user", "extra", "bundled"]


class DiagnosticKind(StrEnum):
    MALFORMED = "malformed"
    INELIGIBLE = "ineligible"
    SHADOWED = "shadowed"
    POLICY = "policy"
    WARNING = "warning"
    UNTRUSTED = "untrusted"  # a workspace skill held until the person trusts it


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """Why a skill was excluded, shadowed or warned about; never silent."""

    kind: DiagnosticKind
    skill: str
    source: SkillSource
    path: str
    reason: str

    @property
    def excludes(self) -> bool:
        """True when the copy this names is not available because of it."""
        return self.kind is not DiagnosticKind.WARNING


@dataclass(frozen=True, slots=True)
class Eligibility:
    """Host conditions a skill needs; empty tuples mean no condition."""

    os: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    binaries: tuple[str, ...] = ()
    # OpenClaw's `anyBins`: at least one of these must be on PATH.
    any_binaries: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SkillRoot:
    """One place skills are discovered from; roots are kept in precedence order."""

    source: SkillSource
    path: str
    exists: bool


@dataclass(frozen=True, slots=True)
class Skill:
    """An available skill as the snapshot holds it (the body included, never re-read)."""

    name: str
    source: SkillSource
    path: str
    digest: str
    summary: str  # one line: the frontmatter's summary, else its description
    front: Frontmatter = field(default_factory=Frontmatter)
    command: str | None = None  # the alias; None also when two skills claimed it
    eligibility: Eligibility = Eligibility()  # Lily's and OpenClaw's conditions merged
    allowed_tools: tuple[str, ...] | None = None  # `allowed-tools` as tool entries
    extra: dict[str, Any] = field(default_factory=dict)  # keys Lily does not use
    body: str = field(default="", repr=False)
    # A workspace skill the person trusted: its folder's digest then (trust/review.py).
    # Its files are compared with it before the model reads or runs one of them. A held
    # one (`SkillSnapshot.held`) keeps the digest it was trusted at before it changed
    # (None: it is new).
    trusted_digest: str | None = None

    @property
    def invocation_mode(self) -> InvocationMode:
        return self.front.invocation_mode  # type: ignore[return-value]  # checked by the parser

    @property
    def command_tool(self) -> str | None:
        return self.front.command_tool

    @property
    def requires_tools(self) -> tuple[str, ...]:
        return self.front.requires_tools

    @property
    def model_visible(self) -> bool:
        return not self.front.disable_model_invocation

    @property
    def description(self) -> str:
        """The Agent Skills `description` ("" when it has none)."""
        return self.front.description or ""

    @property
    def when_to_use(self) -> str:
        """Claude Code's `when_to_use`: when the skill applies (the ranker and the
        catalog read it)."""
        return self.front.when_to_use or ""

    @property
    def user_invocable(self) -> bool:
        """Claude Code's `user-invocable`: False keeps the skill off every `/` command
        (it is for the model only)."""
        return self.front.user_invocable is not False

    @property
    def argument_hint(self) -> str:
        """Claude Code's `argument-hint` as people see it ("" when it has none); an
        unquoted `[issue]`, which YAML reads as a list, is shown as written."""
        hint = self.front.argument_hint
        if isinstance(hint, tuple):
            return "[" + ", ".join(hint) + "]"
        return " ".join(hint.split()) if hint else ""

    @property
    def argument_names(self) -> tuple[str, ...]:
        """Claude Code's `arguments`: the names of the typed words, in order."""
        names = self.front.arguments
        return tuple(names.split()) if isinstance(names, str) else names or ()

    @property
    def narrowed_tools(self) -> frozenset[str] | None:
        """The lower-case tool names `allowed-tools` narrows the model to while this skill
        is active; None when it has no `allowed-tools`."""
        return None if self.allowed_tools is None else tool_names_of_entries(self.allowed_tools)

    @property
    def shell_commands(self) -> tuple[str, ...] | None:
        """The commands the shell may run while this skill is active, as `Bash(...)`
        patterns (`git status:*`); None: any (tools/command_rules.py matches them)."""
        return None if self.allowed_tools is None else shell_commands(self.allowed_tools)

    @property
    def refused_tools(self) -> frozenset[str]:
        """The lower-case tool names Claude Code's `disallowed-tools` refuses while this
        skill is active (empty when it has none)."""
        entries = parse_allowed_tools(self.front.disallowed_tools)
        return tool_names_of_entries(entries) if entries else frozenset()


@dataclass(frozen=True, slots=True)
class AliasChange:
    """An alias that appeared, moved or went away in a reload; `why` when it is known."""

    command: str
    before: str | None  # the skill it called, None when it is new
    after: str | None  # the skill it calls now, None when it is gone
    why: str = ""


@dataclass(frozen=True, slots=True)
class SnapshotDiff:
    """What a reload changed: skills by name (each tuple sorted), the skills newly held
    for the person's trust (changed since they trusted it, or new: not `removed`, not
    an exclusion), the exclusions that are new (with their reasons) and every alias
    added, moved or dropped."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    newly_excluded: tuple[Diagnostic, ...] = ()
    aliases: tuple[AliasChange, ...] = ()
    held: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.newly_excluded
                    or self.aliases or self.held)


@dataclass(frozen=True)
class SkillSnapshot:
    """The session's frozen view of its skills: ordered, versioned, digested. A value:
    its rankers (indexed on first use) are kept beside it, by its owner (`SkillIndex`).

    `held`: the skills waiting for the person's trust (trust/review.py), each also an
    `untrusted` diagnostic. Only `/skills` reads them (to say which would match, ranked
    apart: `SkillIndex.held_ranker`): they are never in `skills`, `get` or `by_command`,
    so never in the catalog, invoked, or given to a tool."""

    version: int
    digest: str
    roots: tuple[SkillRoot, ...]
    skills: tuple[Skill, ...]
    diagnostics: tuple[Diagnostic, ...]
    held: tuple[Skill, ...] = ()
    _by_name: dict[str, Skill] = field(init=False, repr=False, compare=False)
    _by_command: dict[str, Skill] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {s.name: s for s in self.skills})
        object.__setattr__(
            self, "_by_command", {s.command: s for s in self.skills if s.command}
        )

    def get(self, name: str) -> Skill | None:
        return self._by_name.get(name)

    def by_command(self, command: str) -> Skill | None:
        return self._by_command.get(command)

    @property
    def excluded(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.excludes)

    @property
    def warnings(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if not d.excludes)

    @property
    def held_names(self) -> frozenset[str]:
        """The names of the skills held for the person's trust (`untrusted`)."""
        return frozenset(d.skill for d in self.diagnostics
                         if d.kind is DiagnosticKind.UNTRUSTED)

    def excluded_reason(self, name: str) -> Diagnostic | None:
        """The diagnostic that keeps the winning copy of `name` out, if any."""
        for diag in self.diagnostics:
            if diag.skill == name and diag.excludes and diag.kind is not DiagnosticKind.SHADOWED:
                return diag
        return None


def diff_snapshots(old: SkillSnapshot, new: SkillSnapshot) -> SnapshotDiff:
    """Added, removed and changed (other source or other bytes) available skills; those
    newly held for trust (a trusted skill edited since is held, not removed); the
    exclusions the old snapshot did not have; the aliases that differ."""
    before = {s.name: (s.source, s.digest) for s in old.skills}
    after = {s.name: (s.source, s.digest) for s in new.skills}
    held = new.held_names - old.held_names
    known = set(old.excluded)
    return SnapshotDiff(
        added=tuple(sorted(after.keys() - before.keys())),
        removed=tuple(sorted(before.keys() - after.keys() - held)),
        changed=tuple(sorted(n for n in after.keys() & before.keys() if after[n] != before[n])),
        newly_excluded=tuple(d for d in new.excluded if d not in known
                             and d.kind is not DiagnosticKind.UNTRUSTED),
        aliases=_alias_changes(old, new),
        held=tuple(sorted(held)),
    )


def _alias_changes(old: SkillSnapshot, new: SkillSnapshot) -> tuple[AliasChange, ...]:
    was = {s.command: s.name for s in old.skills if s.command}
    now = {s.command: s.name for s in new.skills if s.command}
    changes = []
    for command in sorted(was.keys() | now.keys()):
        before, after = was.get(command), now.get(command)
        if before == after:
            continue
        why = ""
        if after is None and before is not None:
            why = _why_alias_gone(new, command, before)
        changes.append(AliasChange(command, before, after, why))
    return tuple(changes)


def _why_alias_gone(new: SkillSnapshot, command: str, skill: str) -> str:
    """Why `skill` no longer answers to `/command`, from the new snapshot's diagnostics."""
    for diag in new.diagnostics:
        if diag.skill == skill and f"alias /{command} " in diag.reason:
            return diag.reason
    if new.get(skill) is None:
        excluded = new.excluded_reason(skill)
        return f"{skill} is excluded: {excluded.reason}" if excluded else f"{skill} is gone"
    return f"{skill} no longer declares it"
