"""Frontmatter made only of `key: words` lines, read without the YAML loader.

Most SKILL.md frontmatter is a few lines such as `name: pdf` and `description: "Fill in
PDF forms."`, perhaps a list of words or one block of such lines under a key. For exactly
that shape this returns what `yaml.safe_load` returns (the same dict, in order); for
anything else it returns None and the caller uses the YAML loader, which then also gives
the errors. So a workspace of such skills (the bundled ones, 981 of the shared corpus's
1,100) starts without importing PyYAML (whose reader compiles a character class over
all of Unicode as it loads) or running its parser per file.

A line is taken only when YAML could read it no other way. The key is ASCII letters,
digits, `_` or `-`, and not one of the words YAML 1.1 reads as a boolean or null (`yes`,
`Off`, `null`, ...). The value is printable (no tab, no line or paragraph separator, no
control or format character) and is either quoted on that line, with nothing but spaces
after it (`"..."` without `\\` or `"` inside, `'...'` without `'` inside: taken as
written), or plain: it starts with a letter (so it cannot be a number, date or merge
key), is not a boolean or null word, has no `: ` or ` #` and does not end with `:`
(where YAML would see a mapping or a comment). A value may also be a list of words
written `[a, b-c]` (each starts with a letter and has only ASCII letters, digits and
`_./-`), and a `key:` line alone may be followed by lines all indented alike, either
`- value` (a list) or `key: value` (a mapping; no deeper). Blank lines are allowed; a
repeated key, a comment, a value over several lines, anything deeper: None.
tests/core/test_plain_frontmatter.py compares this with the loader on every SKILL.md of
the shared corpus and on edge cases.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["parse_plain_frontmatter"]

_KEY = r"[A-Za-z_][A-Za-z0-9_-]{0,127}"
_LINE = re.compile(rf"({_KEY}):(?: +([^ ].*))?", re.ASCII)  # no value: a block follows
_CHILD = re.compile(rf"( +)(?:- +([^ ].*)|({_KEY}): +([^ ].*))", re.ASCII)
_WORD = r"[A-Za-z][A-Za-z0-9_./-]*"
_FLOW_LIST = re.compile(rf"\[ *((?:{_WORD} *, *)*{_WORD})? *\]", re.ASCII)

# yaml.resolver.Resolver's bool and null words (YAML 1.1, as PyYAML resolves them).
_NOT_STRINGS = frozenset({
    "yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False",
    "FALSE", "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL",
})


def parse_plain_frontmatter(text: str) -> dict[str, Any] | None:
    """The mapping `text` holds when it is made of `key: words` lines as above; None
    when YAML must read it."""
    data: dict[str, Any] = {}
    for line, indented in _entries(text):
        match = _LINE.fullmatch(line)
        # A value on the key's line, or indented lines under it: exactly one of them.
        if (match is None or match[1] in data or match[1] in _NOT_STRINGS
                or (match[2] is None) != bool(indented)):
            return None
        value = _block(indented) if match[2] is None else _value(match[2])
        if value is None:
            return None
        data[match[1]] = value
    return data or None


def _entries(text: str) -> list[tuple[str, list[str]]]:
    """Each line that starts a key (or anything else not indented), with the indented
    lines under it; blank lines dropped. Indented lines before any: an entry of ""."""
    entries: list[tuple[str, list[str]]] = []
    for line in text.split("\n"):
        if line.startswith(" "):
            if not entries:
                entries.append(("", []))
            entries[-1][1].append(line)
        elif line:
            entries.append((line, []))
    return entries


def _block(lines: list[str]) -> list[str] | dict[str, Any] | None:
    """The list or mapping of a `key:` line's indented lines, all indented alike."""
    children = [m for m in map(_CHILD.fullmatch, lines) if m is not None]
    if len(children) != len(lines) or len({m[1] for m in children}) != 1:
        return None
    if all(m[2] is not None for m in children):
        items = [_string(m[2]) for m in children]
        return None if None in items else items  # type: ignore[return-value]
    pairs: dict[str, Any] = {}
    for m in children:
        key, written = m[3], m[4]
        if key is None or key in pairs or key in _NOT_STRINGS:
            return None
        value = _value(written)
        if value is None:
            return None
        pairs[key] = value
    return pairs


def _value(written: str) -> str | list[str] | None:
    """A value on its key's line: a list of words, or a string."""
    if not written.startswith("["):
        return _string(written)
    flow = _FLOW_LIST.fullmatch(written.rstrip(" "))
    if flow is None:
        return None
    words = [word.strip(" ") for word in flow[1].split(",")] if flow[1] else []
    return None if any(word in _NOT_STRINGS for word in words) else words


def _string(written: str) -> str | None:
    """The string a value written on one line is, when YAML reads it as that string."""
    if not written.isprintable():
        return None
    if written[0] in "\"'":  # quoted: taken as written, if nothing is escaped
        end = written.find(written[0], 1)
        inside = written[1:end]
        if end == -1 or written[end + 1 :].strip(" ") or "\\" in inside:
            return None
        return inside
    value = written.rstrip(" ")
    if (value in _NOT_STRINGS or not value[0].isalpha() or ": " in value or " #" in value
            or value.endswith(":")):
        return None
    return value
