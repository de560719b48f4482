"""Claude Code's invocation rules for a SKILL.md: the placeholders in its body, the
arguments the person typed, and the `!`command`` lines Lily never runs. Pure.

One substitution function for every way a skill reaches the model: the skill's folder
placeholders are always replaced; the argument placeholders only when the person
invoked the skill with a `/` command (a skill the model selected had no arguments
typed, and keeps them as written).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable

from lily_kernel.skills.frontmatter import MAX_SKILL_BYTES
from lily_kernel.skills.models import Skill

__all__ = [
    "EXPANSION_CUT",
    "FOLDER_PLACEHOLDERS",
    "MAX_EXPANSION_GROWTH",
    "alias_clashes",
    "dynamic_context",
    "expand_skill_body",
    "invocation_warnings",
    "split_arguments",
]

# What other agents write for the skill's own folder (OpenClaw `{baseDir}`, Claude Code
# `${CLAUDE_SKILL_DIR}`, and two spellings seen in the corpus). tools/skill_files.py,
# which may not import skills/, accepts the same list as path prefixes (tested equal).
FOLDER_PLACEHOLDERS = ("{baseDir}", "${CLAUDE_SKILL_DIR}", "{skill_dir}", "${SKILL_DIR}")

# `$ARGUMENTS[N]`, `$ARGUMENTS`, `$N`. A `$N` followed by `.5` or `,000` is a price
# ("$1,456.90", "$0.001"), not a placeholder; after a word character it is no `$N` either.
_ARGUMENT_PARTS = (
    r"\$ARGUMENTS\[(?P<index>\d+)\]",
    r"\$ARGUMENTS(?!\w)",
    r"\$(?P<position>\d+)(?!\w|[.,]\d)",
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_FOLDER = "|".join(re.escape(p) for p in FOLDER_PLACEHOLDERS)
_FOLDER_ONLY = re.compile(f"(?P<folder>{_FOLDER})")

# What the substitutions may add to a body beyond one copy of the request: as much as a
# SKILL.md may hold. Without a bound, 20,000 `$ARGUMENTS` and a 10 KB request made a
# 200 MB request to the model (and 28,000 `{baseDir}` in a 256 KiB body, 3 MB). Past it,
# the rest of the placeholders are left as written, after this line.
MAX_EXPANSION_GROWTH = MAX_SKILL_BYTES
EXPANSION_CUT = (f"[Lily cut the expansion here: expanded in full, this SKILL.md would grow "
                 f"by more than {MAX_EXPANSION_GROWTH // 1024} KiB and the request; the "
                 "placeholders from here on are left as written]")

# Claude Code runs `!`command`` (inline) and ```! fenced blocks before the model reads
# the skill; Lily never does. Its own two patterns (`promptShellExecution`): a fenced
# block ```` ```!\s*\n?[\s\S]*?\n?``` ````, and inline `(?<=^|\s)!`([^`]+)``, the `!`
# at a line's start or after whitespace. So a `!` right after a backtick is prose, not a
# command: `` `!` before `:` `` (getsentry's `commit`) or `` `!`command`` `` in a sentence
# (its `skill-scanner`). Blocks first, so a `!`x`` inside one counts once.
_DYNAMIC = re.compile(r"```!\s*\n?[\s\S]*?\n?```|(?:^|(?<=\s))!`[^`]+`", re.MULTILINE)


def split_arguments(text: str) -> tuple[str, ...]:
    """What the person typed, split as a shell would (quotes group words and are
    removed); an unbalanced quote falls back to a split at whitespace."""
    try:
        return tuple(shlex.split(text))
    except ValueError:
        return tuple(text.split())


def _pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    """Folder and argument placeholders, and the skill's named arguments (longest
    first, so `$old-name` is not read as `$old`), in one expression: one pass, so
    nothing the person typed is itself expanded."""
    usable = sorted({n for n in names if _NAME.fullmatch(n) and n != "ARGUMENTS"},
                    key=lambda n: (-len(n), n))
    parts = [f"(?P<folder>{_FOLDER})", *_ARGUMENT_PARTS]
    if usable:
        parts.append(r"\$(?P<named>" + "|".join(map(re.escape, usable)) + r")(?!\w)")
    return re.compile("|".join(parts))


def expand_skill_body(body: str, folder: str, arguments: str | None = None,
                      names: tuple[str, ...] = ()) -> str:
    """`body` with the folder placeholders replaced by `folder`, and, when `arguments`
    is given (the person's text after the command), `$ARGUMENTS` by that text as typed,
    `$ARGUMENTS[N]` and `$N` by its Nth word (from 0, shell-style; "" past the last) and
    `$name` by the word at the name's place in `names` (frontmatter `arguments`).
    The body grows by at most `MAX_EXPANSION_GROWTH` characters and the request's
    length; the placeholders past that point are left as written, after `EXPANSION_CUT`."""
    if arguments is None:
        if "{" not in body:  # no placeholder can be there: most bodies
            return body
        return _FOLDER_ONLY.sub(_bounded(lambda _: folder, 0), body)
    # Split only when the body asks for a word: shlex takes 3 s over a 500 KB request.
    words: tuple[str, ...] | None = None
    places = {name: i for i, name in reversed(list(enumerate(names)))}

    def word(index: int) -> str:
        nonlocal words
        if words is None:
            words = split_arguments(arguments)
        return words[index] if index < len(words) else ""

    def replace(match: re.Match[str]) -> str:
        if match.group("folder") is not None:
            return folder
        if match.group("index") is not None:
            return word(int(match.group("index")))
        if match.group("position") is not None:
            return word(int(match.group("position")))
        named = match.groupdict().get("named")
        if named is not None:
            return word(places[named])
        return arguments

    return _pattern(names).sub(_bounded(replace, len(arguments)), body)


def _bounded(replace: Callable[[re.Match[str]], str],
             request: int) -> Callable[[re.Match[str]], str]:
    """`replace`, until its replacements have grown the body by more than
    MAX_EXPANSION_GROWTH + `request` characters: that placeholder and the ones after it
    stay as written, the first after EXPANSION_CUT."""
    room = MAX_EXPANSION_GROWTH + request
    grown = 0

    def bounded(match: re.Match[str]) -> str:
        nonlocal grown
        if grown > room:
            return match.group()
        value = replace(match)
        grown += len(value) - len(match.group())
        if grown > room:
            return EXPANSION_CUT + match.group()
        return value

    return bounded


def invocation_warnings(skill: Skill, reserved: frozenset[str]) -> list[str]:
    """What the person should know of how `skill` is invoked: `/<name>` taken by a
    built-in command (which wins), and dynamic context Lily does not run."""
    warnings = []
    if skill.user_invocable and skill.name in reserved:
        warnings.append(f"/{skill.name} is the built-in command; invoke this skill with "
                        f"/skill {skill.name}")
    dynamic = dynamic_context(skill.body)
    if dynamic is not None:
        warnings.append(dynamic)
    return warnings


def alias_clashes(skills: Iterable[Skill]) -> list[tuple[Skill, str]]:
    """Skills whose `/<name>` is another skill's alias (`command:`): the alias wins."""
    skills = list(skills)
    owners = {s.command: s.name for s in skills if s.command}
    return [(s, f"/{s.name} is the alias of the skill '{owners[s.name]}' (command: "
                f"{s.name}), which wins; invoke '{s.name}' with /skill {s.name}")
            for s in skills
            if s.user_invocable and owners.get(s.name, s.name) != s.name]


def _has_dynamic_mark(body: str) -> bool:
    """Whether a `!` follows a backtick or three: most bodies have no `!` at all, and
    looking for one character is ~20x faster than for "!`" (measured over the corpus:
    0.7 ms against 12 ms a load), which matters at every snapshot build."""
    at = body.find("!")
    while at != -1:
        if body.startswith("`", at + 1) or body.endswith("```", 0, at):
            return True
        at = body.find("!", at + 1)
    return False


def dynamic_context(body: str) -> str | None:
    """The warning for a body holding Claude Code's dynamic context, or None."""
    if not _has_dynamic_mark(body):
        return None
    found = _DYNAMIC.findall(body)
    if not found:
        return None
    first = " ".join(found[0].split())  # a fenced block on one line
    first = first if len(first) <= 60 else first[:57] + "...`"
    return (f"{len(found)} Claude Code dynamic context command(s), e.g. {first}: "
            "!`command` lines are not run by Lily; the model sees them as text")
