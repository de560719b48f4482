"""The Agent Skills specification's rules for a SKILL.md, each with its one message. Pure.

`lily validate` reports every rule a skill breaks as an error. The loader stays lenient,
as the specification's client guide recommends: it loads the skill and reports the
broken rules about values the skill sets (`value_breaks`) as warnings. What Lily's own
format leaves out on purpose (frontmatter, `name`, `description`: `missing_parts`) it
does not warn about; see docs/skills.md, "The Agent Skills specification".
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date
from typing import Any

from lily_kernel.skills.fields import Frontmatter
from lily_kernel.skills.frontmatter import SkillDocument

__all__ = [
    "MAX_COMPATIBILITY",
    "MAX_DESCRIPTION",
    "MAX_NAME",
    "NO_DESCRIPTION",
    "NO_FRONTMATTER",
    "NO_NAME",
    "missing_parts",
    "spec_breaks",
    "value_breaks",
]

MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500

_SPEC = "the Agent Skills specification"
NO_FRONTMATTER = f"no frontmatter; {_SPEC} requires one, with name and description"
NO_NAME = f"no name; {_SPEC} requires one, equal to the folder name"
NO_DESCRIPTION = f"no description; {_SPEC} requires one (agents choose skills by it)"

# The common case, checked first: ASCII words joined by single hyphens.
_PLAIN_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def _name_char_ok(char: str) -> bool:
    # "unicode lowercase alphanumeric characters": a letter or digit with no upper case
    # (so `技能` and `навык` pass, as in the reference validator), or a hyphen.
    return char == "-" or (char.isalnum() and char.lower() == char)


def _normal(text: str) -> str:
    # As the reference validator does (NFKC): a name written in decomposed form (`e` and
    # a combining accent, as some file systems store folder names) is the same name.
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def _name_breaks(name: str, folder: str) -> list[str]:
    if not name:
        return [f"name is empty; {_SPEC} requires 1 to {MAX_NAME} characters"]
    found = []
    normal = _normal(name)
    if len(normal) > MAX_NAME:
        found.append(f"name is {len(normal):,} characters; {_SPEC} allows at most {MAX_NAME}")
    if not _PLAIN_NAME.fullmatch(normal):
        bad = list(dict.fromkeys(c for c in normal if not _name_char_ok(c)))
        if bad:
            shown = ", ".join(repr(c) for c in bad[:5]) + (", …" if len(bad) > 5 else "")
            found.append(f"name '{name}' has {shown}; {_SPEC} allows only lowercase "
                         "letters, digits and hyphens")
        if normal.startswith("-") or normal.endswith("-"):
            found.append(f"name '{name}' starts or ends with a hyphen; {_SPEC} forbids it")
        if "--" in normal:
            found.append(f"name '{name}' has two hyphens in a row; {_SPEC} forbids it")
    if name != folder and normal != _normal(folder):
        found.append(f"name '{name}' differs from the directory name '{folder}'; {_SPEC} "
                     f"requires them equal (Lily calls the skill '{folder}')")
    return found


def _kind(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, date):
        return "a date"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


def value_breaks(folder: str, front: Frontmatter) -> list[str]:
    """The rules broken by values the frontmatter sets (the loader's warnings)."""
    found = []
    if front.name is not None:
        found += _name_breaks(front.name, folder)
    if front.description is not None:
        if not front.description.strip():
            found.append(f"description is empty; {_SPEC} requires 1 to "
                         f"{MAX_DESCRIPTION:,} characters")
        elif len(front.description) > MAX_DESCRIPTION:
            found.append(f"description is {len(front.description):,} characters; {_SPEC} "
                         f"allows at most {MAX_DESCRIPTION:,}")
    if front.compatibility is not None:
        if not front.compatibility:
            found.append(f"compatibility is empty; {_SPEC} requires 1 to "
                         f"{MAX_COMPATIBILITY} characters, or no compatibility key")
        elif len(front.compatibility) > MAX_COMPATIBILITY:
            found.append(f"compatibility is {len(front.compatibility):,} characters; "
                         f"{_SPEC} allows at most {MAX_COMPATIBILITY}")
    for key, value in (front.metadata or {}).items():
        if type(value) is not str:
            found.append(f"metadata '{key}' is {_kind(value)}, not a string; {_SPEC} "
                         "allows only string values")
    return found


def missing_parts(doc: SkillDocument) -> list[str]:
    """What the specification requires and the skill leaves out (Lily's format allows it)."""
    if not doc.has_frontmatter:
        return [NO_FRONTMATTER]
    front = doc.frontmatter
    found = []
    if front.name is None:
        found.append(NO_NAME)
    if front.description is None:
        found.append(NO_DESCRIPTION)
    return found


def spec_breaks(folder: str, doc: SkillDocument) -> list[str]:
    """Every rule of the specification the skill breaks (`lily validate`'s errors)."""
    return missing_parts(doc) + value_breaks(folder, doc.frontmatter)
