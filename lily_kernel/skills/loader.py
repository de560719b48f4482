"""Build a skill snapshot from ordered roots: discover → precedence → checks → index.

Loading never raises for a bad skill: every exclusion becomes a Diagnostic with its
reason. Only a configured root that exists but cannot be listed is a hard error.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from collections import defaultdict
from dataclasses import dataclass, replace

from lily_kernel.errors import SkillRootError
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

SKILL_FILE = "SKILL.md"
# Nested skills (`<root>/<group>/<skill>/SKILL.md`): a skill folder at most this many
# folders below its root, at most this many folders looked at in one root.
_SKILL_SUFFIX = os.sep + SKILL_FILE
MAX_DEPTH = 6
MAX_FOLDERS = 100_000
# Folders that are never groups of skills (besides hidden ones): packages and caches.
SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__"})
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


def _unreadable(root: SkillRoot, exc: OSError) -> SkillRootError:
    return SkillRootError(
        f"Cannot read the {root.source} skills root {root.path}: {exc.strerror or exc}.")


def _folders(path: str) -> list[tuple[str, str]]:
    """The non-hidden child folders of `path` (name, path), in name order."""
    found = []
    for entry in os.scandir(path):
        if entry.name.startswith(".") or entry.name in SKIPPED_FOLDERS:
            continue
        try:
            if entry.is_dir():
                found.append((entry.name, entry.path))
        except OSError:
            continue
    found.sort()
    return found


def _root_folders(root: SkillRoot) -> list[tuple[str, str]]:
    """The root's own child folders; a root that exists but cannot be listed raises."""
    if not root.exists:
        # Missing, or a link that leads nowhere: empty. A link loop is no missing root
        # but a broken one (os.path.exists says False for both): report it.
        try:
            os.stat(root.path)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _unreadable(root, exc) from exc
        return []
    try:
        return _folders(root.path)
    except FileNotFoundError:
        return []  # removed since it was looked at: a missing root is empty
    except OSError as exc:
        raise _unreadable(root, exc) from exc


@dataclass(frozen=True, slots=True)
class Found:
    """A folder holding a SKILL.md, in one root; the skill's name is the folder's."""

    root: SkillRoot
    folder: str
    skill_file: str


def _walk_root(root: SkillRoot, diagnostics: list[Diagnostic]) -> dict[str, list[Found]]:
    """The skill folders under one root, each name's copies shallowest first.

    A folder holding a SKILL.md is a skill and is not searched further; any other
    folder is a group, searched down to MAX_DEPTH, hidden folders skipped, at most
    MAX_FOLDERS folders in all (then a warning). Level by level, each in name order.
    """
    found: dict[str, list[Found]] = defaultdict(list)
    level, depth, looked, seen = _root_folders(root), 1, 0, {os.path.realpath(root.path)}
    while level:
        groups: list[tuple[str, str]] = []
        for name, folder in level:
            looked += 1
            if looked > MAX_FOLDERS:
                diagnostics.append(Diagnostic(
                    DiagnosticKind.WARNING, os.path.basename(root.path), root.source,
                    root.path, f"stopped looking for skills after {MAX_FOLDERS:,} folders "
                    "in this root; skills deeper or later in name order are not loaded"))
                return found
            # Plain strings and one access() call: this runs once per skill folder.
            skill_file = folder + _SKILL_SUFFIX
            if os.access(skill_file, os.F_OK, follow_symlinks=False):
                found[name].append(Found(root, folder, skill_file))
            elif depth < MAX_DEPTH:
                real = os.path.realpath(folder)
                if real in seen:  # a link back up the tree: already searched
                    continue
                seen.add(real)
                try:
                    groups.extend(_folders(folder))
                except OSError:
                    continue  # an unreadable folder inside a root holds no skill we can load
        level, depth = groups, depth + 1
    return found


def _same_root_copies(name: str, copies: list[Found], diagnostics: list[Diagnostic]) -> Found:
    """One root's copy of a name: the shallowest, then first in path order; the others
    are `shadowed`, naming it."""
    first = copies[0]
    for other in copies[1:]:
        diagnostics.append(Diagnostic(
            DiagnosticKind.SHADOWED, name, other.root.source, other.skill_file,
            f"another skill named '{name}' in the same root wins: {first.skill_file} "
            "(the shallowest, then the first in path order)"))
    return first


def discover_candidates(
    roots: tuple[SkillRoot, ...], diagnostics: list[Diagnostic] | None = None
) -> dict[str, list[Found]]:
    """Each skill name, with its copy in each root holding it, in precedence order.

    A root that is the same folder as a higher one (e.g. a notebook opened in Lily's
    own checkout) is read once, as the higher root: a skill cannot shadow itself.
    """
    diagnostics = diagnostics if diagnostics is not None else []
    found: dict[str, list[Found]] = defaultdict(list)
    seen: set[str] = set()
    for root in roots:
        real = os.path.realpath(root.path)
        if real in seen:
            continue
        seen.add(real)
        for name, copies in _walk_root(root, diagnostics).items():
            found[name].append(_same_root_copies(name, copies, diagnostics))
    return found


class OutsideFolder(OSError):  # noqa: N818 (an OSError, as the loader reports them)
    """A SKILL.md that is a link to a file outside its skill folder."""


def _opened_path(fd: int, path: str) -> str:
    """The real path of the file open at `fd`: what was read, not what a name now says
    (Linux: /proc/self/fd; elsewhere the name's real path)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(path)


def _check_inside(fd: int, path: str) -> None:
    """Refuse a SKILL.md (a link) whose real file is not in its skill folder: a link to
    ~/.ssh/id_rsa would be read, sent to the model and logged. Checked on the open file,
    so a link swapped in meanwhile is caught too."""
    real = _opened_path(fd, path)
    folder = os.path.realpath(os.path.dirname(path))
    if not real.startswith(folder + os.sep):
        raise OutsideFolder(errno.EXDEV, f"it is a link to a file outside its skill "
                            f"folder ({real}); Lily reads only what the folder holds")


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _open(path: str) -> int:
    """The SKILL.md, open for reading. Not a link (nearly always): opened as it is, one
    system call; a link: followed, then its real file checked."""
    # O_NONBLOCK: a FIFO named SKILL.md must not hang the loader; fstat rejects it.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    try:
        return os.open(path, flags | _NOFOLLOW)
    except OSError as exc:
        if exc.errno != errno.ELOOP or not _NOFOLLOW:
            raise
    fd = os.open(path, flags)
    try:
        _check_inside(fd, path)
    except OSError:
        os.close(fd)
        raise
    return fd


def _read(path: str) -> tuple[bytes, int]:
    """The file's bytes (at most one past the size limit) and its size on disk."""
    fd = _open(path)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        size = min(info.st_size, MAX_SKILL_BYTES) + 1
        # Raw os.read: a buffered file object costs twice as much per small file.
        data = os.read(fd, size)
        # A short read is the end of the file. A full one means it grew since fstat:
        # read on, up to one byte past the limit (enough for the parser to report it).
        while len(data) == size <= MAX_SKILL_BYTES:
            size = min(2 * size, MAX_SKILL_BYTES + 1)
            more = os.read(fd, size - len(data))
            if not more:
                break
            data += more
        return data, max(info.st_size, len(data))
    finally:
        os.close(fd)


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
            return copy, _read(path), copies[index + 1 :]
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
        read: Read = _read(path)
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
