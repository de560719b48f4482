"""Skill names that look like other names: `echo` spelt with a Cyrillic e (U+0435).

A person picks a skill by its name (`/echo`, the catalog the model reads); a name
written with letters that draw like ASCII ones can pass for another skill. Every
name with a character outside ASCII gets a warning naming those characters; one that
reads like another skill's name once its lookalike letters are taken as the ASCII
ones they resemble says which. Pure.
"""

# ruff: noqa: RUF001 (the lookalike letters are the point of this module)
from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from lily_kernel.skills.models import Skill

__all__ = ["lookalike_warnings", "skeleton"]

# Letters from other scripts drawn like ASCII ones (Unicode's confusables, the common
# Cyrillic, Greek and Armenian cases, and the fullwidth forms NFKC already folds).
_LIKE_ASCII = str.maketrans({
    "а": "a", "в": "b", "е": "e", "ё": "e", "і": "i", "ї": "i", "ј": "j", "к": "k",
    "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t", "у": "y", "х": "x",
    "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l", "ɡ": "g",
    "α": "a", "ο": "o", "ρ": "p", "ν": "v", "τ": "t", "υ": "u", "ι": "i", "κ": "k",
    "ε": "e", "χ": "x", "η": "n", "օ": "o", "ս": "u", "ց": "g", "ı": "i", "ℓ": "l",
    "ⅰ": "i", "ⅼ": "l", "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "−": "-",
})


def skeleton(name: str) -> str:
    """The name as it reads: compatibility forms folded, accents dropped, lookalike
    letters taken as the ASCII ones they resemble, lower case."""
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", name))
    bare = "".join(c for c in folded if not unicodedata.combining(c))
    return bare.lower().translate(_LIKE_ASCII)


def _described(name: str) -> str:
    odd = dict.fromkeys(c for c in name if not c.isascii())
    return ", ".join(f"{c} U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}" for c in odd)


def lookalike_warnings(skills: Iterable[Skill], others: Iterable[str] = ()
                       ) -> list[tuple[Skill, str]]:
    """A warning for each skill whose name has characters outside ASCII, saying which,
    and which other name (of `skills`, or `others`: built-in commands) it reads as."""
    skills = list(skills)
    if all(s.name.isascii() for s in skills):
        return []  # nearly every snapshot: nothing to fold
    names = {s.name for s in skills} | set(others)
    by_skeleton: dict[str, list[str]] = {}
    for name in sorted(names):
        by_skeleton.setdefault(skeleton(name), []).append(name)
    warnings = []
    for skill in skills:
        if skill.name.isascii():
            continue
        alike = [n for n in by_skeleton.get(skeleton(skill.name), []) if n != skill.name]
        reads = f"; it reads as '{alike[0]}', another name here" if alike else ""
        warnings.append((skill, f"the name has characters outside ASCII ({_described(skill.name)})"
                                f"{reads}: check it is the skill you mean"))
    return warnings
