"""Tab completion and Shift-Tab inspection for command cells. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass

from lily_kernel.commands.builtins import BUILTIN_COMMANDS, describe_skill
from lily_kernel.commands.results import CommandResult
from lily_kernel.skills import SkillSnapshot

__all__ = ["Completion", "complete", "inspect"]

_WORD = re.compile(r"[^\s]*$")
_SKILL_ARG_COMMANDS = ("skill", "help")


@dataclass(frozen=True)
class Completion:
    matches: tuple[str, ...]
    cursor_start: int
    cursor_end: int


def complete(code: str, cursor_pos: int, snapshot: SkillSnapshot, agents: list[str]) -> Completion:
    """Commands and aliases after `/`; skills after `/skill ` and `/help `; agents after
    `/agent `."""
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
        names = sorted(BUILTIN_COMMANDS | {s.command for s in snapshot.skills if s.command})
        matches = tuple(f"/{n}" for n in names if f"/{n}".startswith(partial))
        return Completion(matches, start, cursor_pos)
    arg_index = len(words) if typing_new_word else len(words) - 1
    if arg_index != 1:
        return empty
    command = words[0][1:]
    if command in _SKILL_ARG_COMMANDS:
        candidates = [s.name for s in snapshot.skills]
    elif command == "agent":
        candidates = agents
    else:
        return empty
    return Completion(tuple(n for n in candidates if n.startswith(partial)), start, cursor_pos)


def inspect(code: str, cursor_pos: int, snapshot: SkillSnapshot) -> CommandResult | None:
    """The `/help` text of the skill name (or `/alias`) under the cursor, if any."""
    left = re.search(r"[^\s]*$", code[:cursor_pos])
    right = re.match(r"[^\s]*", code[cursor_pos:])
    word = (left.group(0) if left else "") + (right.group(0) if right else "")
    skill = snapshot.get(word)
    if skill is None and word.startswith("/"):
        skill = snapshot.by_command(word[1:]) or snapshot.get(word[1:])
    if skill is None:
        return None
    return CommandResult("help", f"Skill {skill.name}", describe_skill(skill))
