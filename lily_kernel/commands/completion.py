"""Tab completion and Shift-Tab inspection for command cells. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass

from lily_kernel.commands.builtins import describe_skill
from lily_kernel.commands.registry import CommandTable
from lily_kernel.commands.resolve import SKILL_PREFIX, resolve, skill_commands
from lily_kernel.commands.results import CommandResult
from lily_kernel.skills import Skill, SkillSnapshot

__all__ = ["Completion", "complete", "inspect"]

_WORD = re.compile(r"[^\s]*$")


@dataclass(frozen=True)
class Completion:
    """The matches, the span they replace, and what each match is (`types`, one per
    match: `command`, `alias`, `skill`, `agent`, `choice` (a word a command takes), with
    a skill's argument hint after it, e.g. `skill <issue> [branch]`)."""

    matches: tuple[str, ...]
    cursor_start: int
    cursor_end: int
    types: tuple[str, ...] = ()


def _kind(what: str, skill: Skill | None) -> str:
    hint = skill.argument_hint if skill is not None else ""
    return f"{what} {hint}" if hint else what


def _commands(snapshot: SkillSnapshot, commands: CommandTable) -> dict[str, str]:
    """Every `/` name and what it is: built-ins, aliases, the skills' own names."""
    names = {name: "command" for name in commands.names()}
    for name, (kind, skill) in skill_commands(snapshot, commands.names()).items():
        names[name] = _kind("skill" if kind == "name" else kind, skill)
    return names


def _found(pairs: list[tuple[str, str]], partial: str, start: int, end: int) -> Completion:
    kept = sorted((m, t) for m, t in pairs if m.startswith(partial))
    return Completion(tuple(m for m, _ in kept), start, end, tuple(t for _, t in kept))


def complete(code: str, cursor_pos: int, snapshot: SkillSnapshot, agents: list[str],
             commands: CommandTable) -> Completion:
    """Commands, aliases and skills after `/` (`/skill:` and skill names after
    `/skill:`); skills after `/skill ` and `/help `; agents after `/agent `; a command's
    `choices` after it (`/policy a`: `ask`, `auto`)."""
    before = code[:cursor_pos]
    empty = Completion((), cursor_pos, cursor_pos)
    if "\n" in before or not before.lstrip().startswith("/"):
        return empty
    offset = len(before) - len(before.lstrip())
    words = before[offset:].split()
    typing_new_word = before[-1:].isspace()
    prefix = _WORD.search(before)
    start = prefix.start() if prefix else cursor_pos
    partial = before[start:]
    if len(words) == 1 and not typing_new_word:
        if partial.startswith("/" + SKILL_PREFIX):
            pairs = [(f"/{SKILL_PREFIX}{s.name}", _kind("skill", s))
                     for s in snapshot.skills if s.user_invocable]
        else:
            pairs = [(f"/{n}", kind) for n, kind in _commands(snapshot, commands).items()]
        return _found(pairs, partial, start, cursor_pos)
    arg_index = len(words) if typing_new_word else len(words) - 1
    if arg_index != 1:
        return empty
    command = commands.get(words[0][1:])
    argument = command.argument if command is not None else "text"
    if argument in ("skill", "invocable_skill"):
        # A command that invokes offers the skills the person may invoke; `/help` any.
        pairs = [(s.name, _kind("skill", s)) for s in snapshot.skills
                 if argument == "skill" or s.user_invocable]
    elif argument == "agent":
        pairs = [(name, "agent") for name in agents]
    elif command is not None and command.choices:
        pairs = [(word, "choice") for word in command.choices]
    else:
        return empty
    return _found(pairs, partial, start, cursor_pos)


def inspect(code: str, cursor_pos: int, snapshot: SkillSnapshot,
            commands: CommandTable) -> CommandResult | None:
    """The `/help` text of the skill name (or `/alias`, `/<name>`, `/skill:<name>`)
    under the cursor, if any."""
    left = re.search(r"[^\s]*$", code[:cursor_pos])
    right = re.match(r"[^\s]*", code[cursor_pos:])
    word = (left.group(0) if left else "") + (right.group(0) if right else "")
    skill = snapshot.get(word)
    if skill is None and word.startswith("/"):
        skill = resolve(word[1:], snapshot, commands).skill
    if skill is None:
        return None
    return CommandResult("help", f"Skill {skill.name}", describe_skill(skill))
