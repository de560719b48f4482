"""What the model reads of a skill: its SKILL.md, framed, or a line pointing back to it.

The one home of the framing, whichever way the skill was selected: by `load_skill` (a
tool result), by a structured declaration (a message after the person's), or by the
person (`/skill`, a section of the system context).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

from lily_kernel.skills import Skill, expand_skill_body

__all__ = [
    "SKILL_FILES_NOTE",
    "SelectionRefusal",
    "bounded_body",
    "declared_skill_message",
    "forced_skill_section",
    "loaded_skill_text",
    "selection_refusal",
    "skill_body",
]

# Said with every loaded skill: where the files its SKILL.md names by relative path are.
SKILL_FILES_NOTE = (
    "Paths this SKILL.md names (references/..., scripts/..., or under the skill's folder) "
    "are the skill's own files: read such a file with `read_skill_file(path)` and run a "
    "script with `run_skill_script(script, args)` when those tools are offered."
)


def skill_body(skill: Skill, arguments: str | None = None) -> str:
    """The SKILL.md body as the model reads it: `{baseDir}`, `${CLAUDE_SKILL_DIR}` (and
    the like) replaced by the skill's folder; for a skill the person invoked, whose
    request is `arguments`, `$ARGUMENTS`, `$N` and the named arguments too (a skill the
    model selected keeps them as written: nothing was typed for it)."""
    return expand_skill_body(skill.body, os.path.dirname(skill.path), arguments,
                             skill.argument_names)


def _framed(name: str, body: str) -> str:
    return f"SKILL.md of '{name}':\n\n{body.strip()}"


def loaded_skill_text(name: str, body: str) -> str:
    """The result of `load_skill`: the SKILL.md, and where its files are."""
    return f"{_framed(name, body)}\n\n({SKILL_FILES_NOTE})\n"


def forced_skill_section(name: str, body: str) -> str:
    """The system context's section for a skill the person invoked."""
    return f"# Skill: {name}\n\n{body.strip()}"


def bounded_body(body: str, max_chars: int | None) -> tuple[str, int]:
    """The SKILL.md body as a model with a small window reads it: its opening, cut at a
    line's end (or a word's, within a long paragraph), with a line saying how much was
    left out (never silently); and how many characters were left out (0: it is whole)."""
    body = body.strip()
    if max_chars is None or len(body) <= max_chars:
        return body, 0
    opening = body[:max_chars]
    # At a line's end; within one long paragraph, at a word's end.
    for end in ("\n", " "):
        if opening.rfind(end) > max_chars // 2:
            opening = opening[: opening.rindex(end)]
            break
    left = len(body) - len(opening)
    return (f"{opening.rstrip()}\n\n[The rest of this SKILL.md, {left:,} characters, is "
            "left out to fit the model's context window.]"), left


def _body_message(name: str, body: str) -> dict[str, Any]:
    return {"role": "user",
            "content": f"{_framed(name, body)}\n\nFollow this skill to answer my message above."}


def declared_skill_message(name: str, body: str,
                           history: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What a model without tools reads before answering with a selected skill: the
    SKILL.md `body` (for a small window, the opening `bounded_body` gives), or, when
    that same SKILL.md is already in the conversation (selected in an earlier turn, and
    unchanged), a line pointing back to it. The conversation then carries each body
    once: a follow-up with the same skill reads a dozen tokens, not the whole file."""
    message = _body_message(name, body)
    if message in history:
        return {"role": "user", "content": f"Follow the SKILL.md of '{name}' above."}
    return message


# Why `load_skill` may not select a skill: the person forced one, one is already loaded,
# there is no such skill, or the skill is only for the person (disable-model-invocation).
SelectionRefusal = Literal["forced", "loaded", "unknown", "person_only"]
_SELECTION = {
    "forced": ("the person invoked the skill '{name}' for this request; load_skill is not "
               "available"),
    "loaded": ("the skill '{name}' is already loaded for this request; only one skill can "
               "be used per request"),
    "unknown": "no skill named {name!r} in this session",
    "person_only": "the skill '{name}' can only be invoked by the person",
}


def selection_refusal(why: SelectionRefusal, name: str) -> str:
    """Why `load_skill` did not select: `name` is the skill it concerns."""
    return _SELECTION[why].format(name=name)
