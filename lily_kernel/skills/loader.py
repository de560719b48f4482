"""Build a skill snapshot from ordered roots: discover (discovery.py) → precedence →
read (skill_file.py) → checks → index.

Loading never raises for a bad skill: every exclusion becomes a Diagnostic with its
reason. Only a configured root that exists but cannot be listed is a hard error.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import defaultdict
from dataclasses import dataclass, replace

from lily_kernel.skills.discovery import SKILL_FILE, Found, discover_candidates
from lily_kernel.skills.eligibility import Host, check_eligibility
from lily_kernel.skills.frontmatter import (
    MAX_SKILL_BYTES,
    SkillDocument,
    SkillFormatError,
    parse_skill_document,
    size_problem,
)
from lily_kernel.skills.invocation import alias_clashes, invocation_warnings
from lily_kernel.skills.lookalikes import lookalike_warnings
from lily_kernel.skills.models import (
    Diagnostic,
    DiagnosticKind,
    Skill,
    SkillRoot,
    SkillSnapshot,
)
from lily_kernel.skills.skill_file import read_skill_file
from lily_kernel.skills.spec import spec_breaks, value_breaks

__all__ = [
    "FolderCheck",
    "Found",
    "LoadRules",
    "check_skill_directory",
    "discover_candidates",
    "drop_shared_aliases",
    "load_snapshot",
]

COMMAND_PATTERN = re.compile(r"[a-z0-9_-]+")  # used with fullmatch


@dataclass(frozen=True)
class LoadRules:
    """What the loader checks skills against, passed in as plain data.

    The loader knows nothing of the tool registry or the command table; the caller
    names the registered tools, the tools the policy allows, and the built-in commands.
    """

    registered_tools: frozenset[str] = frozenset()
    allowed_tools: frozenset[str] = frozenset()
    reserved_commands: frozenset[str] = frozenset()
    # The MCP servers the session may use: a skill's `requires: {mcp: [...]}` names them.
    mcp_servers: frozenset[str] = frozenset()


def _exclusion(
    doc: SkillDocument, rules: LoadRules, host: Host
) -> tuple[DiagnosticKind, str] | None:
    """The first rule of SPEC §2.3 the skill breaks, in a fixed order, or None."""
    front = doc.frontmatter
    if front.invocation_mode == "tool_dispatch" and not front.command_tool:
        return DiagnosticKind.MALFORMED, "invocation_mode tool_dispatch requires command_tool"
    if front.command_tool and front.command_tool not in rules.registered_tools:
        return DiagnosticKind.MALFORMED, (
            f"command_tool '{front.command_tool}' is not a registered tool"
        )
    if front.command is not None:
        if not COMMAND_PATTERN.fullmatch(front.command):
            return DiagnosticKind.MALFORMED, (
                f"command '{front.command}' must match ^[a-z0-9_-]+$"
            )
        if front.command in rules.reserved_commands:
            return DiagnosticKind.MALFORMED, (
                f"command '{front.command}' collides with the built-in /{front.command}"
            )
    denied = [t for t in front.requires_tools if t not in rules.allowed_tools]
    if denied:
        return DiagnosticKind.POLICY, (
            f"requires tool(s) not allowed by the tool policy: {', '.join(denied)}"
        )
    if front.command_tool and front.command_tool not in rules.allowed_tools:
        return DiagnosticKind.POLICY, (
            f"command_tool '{front.command_tool}' is not allowed by the tool policy"
        )
    reason = check_eligibility(doc.eligibility, host)
    if reason is not None:
        return DiagnosticKind.INELIGIBLE, reason
    # Server names compare whatever their case, as the tool policy compares them.
    configured = {name.casefold() for name in rules.mcp_servers}
    missing = [s for s in (front.requires.mcp if front.requires else ())
               if s.casefold() not in configured]
    if missing:
        return DiagnosticKind.INELIGIBLE, (
            f"requires MCP server(s) not configured: {', '.join(missing)} (`mcp_servers` in "
            "lily.yaml, or the Lily home's mcp.json)")
    return None


def _one_line(text: str | None) -> str:
    return " ".join(text.split()) if text else ""


def _skill(name: str, root: SkillRoot, path: str, doc: SkillDocument, digest: str) -> Skill:
    front = doc.frontmatter
    return Skill(
        name=name,
        source=root.source,
        path=path,
        digest=digest,
        summary=_one_line(front.summary or front.description),
        front=front,
        command=front.command,
        eligibility=doc.eligibility,
        allowed_tools=doc.allowed_tools,
        extra=doc.extra,
        body=doc.body,
    )


def drop_shared_aliases(skills: list[Skill], diagnostics: list[Diagnostic]) -> list[Skill]:
    """Two skills claiming one alias lose it both; both stay callable by /skill."""
    claimants: dict[str, list[str]] = defaultdict(list)
    for skill in skills:
        if skill.command:
            claimants[skill.command].append(skill.name)
    shared = {cmd for cmd, names in claimants.items() if len(names) > 1}
    kept = []
    for skill in skills:
        if skill.command in shared:
            others = [n for n in claimants[skill.command] if n != skill.name]
            diagnostics.append(
                Diagnostic(
                    kind=DiagnosticKind.WARNING,
                    skill=skill.name,
                    source=skill.source,
                    path=skill.path,
                    reason=(
                        f"alias /{skill.command} is also claimed by {', '.join(others)}; "
                        f"dropped for all of them (use /skill {skill.name})"
                    ),
                )
            )
            skill = replace(skill, command=None)
        kept.append(skill)
    # A skill's `/<name>` that is another skill's (remaining) alias: the alias wins.
    for skill, reason in alias_clashes(kept):
        diagnostics.append(Diagnostic(DiagnosticKind.WARNING, skill.name, skill.source,
                                      skill.path, reason))
    return kept


Read = tuple[bytes, int] | OSError


def _is_text(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _printable(text: str) -> str:
    """A file-system string with undecodable bytes shown as U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _first_copy(name: str, copies: list[Found]) -> tuple[Found, Read, list[Found]] | None:
    """The highest copy whose SKILL.md can be opened, its bytes, and the lower copies.

    Reading doubles as the existence check: one open per skill, no extra stat.
    """
    for index, copy in enumerate(copies):
        path = copy.skill_file
        try:
            return copy, read_skill_file(path), copies[index + 1 :]
        except FileNotFoundError as exc:
            if os.path.lexists(path):  # a dangling link: a skill that cannot be read
                return copy, exc, copies[index + 1 :]
        except NotADirectoryError:
            continue
        except OSError as exc:
            return copy, exc, copies[index + 1 :]
    return None


def _check_winner(
    name: str,
    root: SkillRoot,
    path: str,
    read: Read,
    rules: LoadRules,
    host: Host,
    diagnostics: list[Diagnostic],
    overall: hashlib._Hash | None = None,
    breaks: list[str] | None = None,
) -> Skill | None:
    """Parse and check one winning copy; record why it is excluded or warned about.

    With `breaks` (`lily validate`), every rule of the Agent Skills specification the
    skill breaks goes there instead of becoming a warning.
    """
    if isinstance(read, OSError):
        if overall is not None:
            overall.update(b"unreadable\n")
        reason = f"cannot read SKILL.md: {read.strerror or read}"
        diagnostics.append(Diagnostic(DiagnosticKind.MALFORMED, name, root.source, path, reason))
        return None
    data, size = read
    digest = hashlib.sha256(data).hexdigest()
    if overall is not None:
        overall.update(f"{digest}\n".encode())
    try:
        if size > MAX_SKILL_BYTES:  # only the start was read: report the size on disk
            raise SkillFormatError(size_problem(size))
        doc = parse_skill_document(data)
        if breaks is not None:  # whatever Lily makes of the skill on this machine
            breaks.extend(spec_breaks(name, doc))
        excluded = _exclusion(doc, rules, host)
    except SkillFormatError as exc:
        excluded = DiagnosticKind.MALFORMED, str(exc)
    if excluded is not None:
        diagnostics.append(Diagnostic(excluded[0], name, root.source, path, excluded[1]))
        return None
    if breaks is None:
        # A load: the skill loads, and each rule of the Agent Skills specification broken
        # by a value it sets is a warning (other agents may refuse the skill).
        for reason in value_breaks(name, doc.frontmatter):
            diagnostics.append(
                Diagnostic(DiagnosticKind.WARNING, name, root.source, path, reason))
    skill = _skill(name, root, path, doc, digest)
    for reason in invocation_warnings(skill, rules.reserved_commands):
        diagnostics.append(Diagnostic(DiagnosticKind.WARNING, name, root.source, path, reason))
    return skill


@dataclass(frozen=True, slots=True)
class FolderCheck:
    """One skill folder checked on its own (`lily validate`)."""

    name: str  # the folder's name: the skill's
    skill: Skill | None  # None when Lily would not load it (a diagnostic says why)
    diagnostics: tuple[Diagnostic, ...]  # what a root load reports, spec warnings aside
    spec_breaks: tuple[str, ...]  # each rule of the Agent Skills specification it breaks


def check_skill_directory(
    directory: str, rules: LoadRules, host: Host | None = None
) -> FolderCheck:
    """Load one skill folder on its own, by the same rules as a root (for `lily validate`),
    and check it against the Agent Skills specification."""
    directory = os.path.abspath(directory)
    parent, name = os.path.split(directory.rstrip(os.sep))
    root = SkillRoot(source="workspace", path=parent, exists=True)
    path = os.path.join(directory, SKILL_FILE)
    try:
        read: Read = read_skill_file(path)
    except OSError as exc:
        read = exc
    diagnostics: list[Diagnostic] = []
    breaks: list[str] = []
    skill = _check_winner(name, root, path, read, rules, (host or Host()).for_one_load(),
                          diagnostics, breaks=breaks)
    return FolderCheck(name, skill, tuple(diagnostics), tuple(breaks))


def load_snapshot(
    roots: tuple[SkillRoot, ...],
    rules: LoadRules,
    host: Host | None = None,
    version: int = 1,
) -> SkillSnapshot:
    """Discover, resolve precedence, check and index the skills under `roots`."""
    host = (host or Host()).for_one_load()
    # Whether a root exists is decided now, at every load: a folder created or removed
    # since the session started counts at the next /reload_skills.
    roots = tuple(replace(r, exists=os.path.exists(r.path)) for r in roots)
    diagnostics: list[Diagnostic] = []
    candidates = discover_candidates(roots, diagnostics)
    skills: list[Skill] = []
    overall = hashlib.sha256()
    for name in sorted(candidates):
        # Precedence: the first copy (highest root) wins, whatever its content.
        # Everything after this is checked on the winner only: no fallback.
        found = _first_copy(name, candidates[name])
        if found is None:
            continue  # folders without a SKILL.md are not skills
        winner, data, lower = found
        root, path = winner.root, winner.skill_file
        if not _is_text(name):  # a folder name that is not valid UTF-8 (surrogate-escaped)
            shown, shown_path = _printable(name), _printable(path)
            overall.update(f"{shown}\0{root.source}\0bad name\n".encode())
            diagnostics.append(Diagnostic(
                DiagnosticKind.MALFORMED, shown, root.source, shown_path,
                "the folder name is not valid UTF-8; rename the folder"))
            continue
        for loser in lower:
            diagnostics.append(
                Diagnostic(DiagnosticKind.SHADOWED, name, loser.root.source, loser.skill_file,
                           f"shadowed by the {root.source} skill at {path}"))
        overall.update(f"{name}\0{root.source}\0".encode())
        skill = _check_winner(name, root, path, data, rules, host, diagnostics, overall)
        if skill is not None:
            skills.append(skill)
    skills = drop_shared_aliases(skills, diagnostics)
    for skill, reason in lookalike_warnings(skills, rules.reserved_commands):
        diagnostics.append(Diagnostic(DiagnosticKind.WARNING, skill.name, skill.source,
                                      skill.path, reason))
    return SkillSnapshot(
        version=version,
        digest=overall.hexdigest(),
        roots=roots,
        skills=tuple(skills),
        diagnostics=tuple(diagnostics),
    )
