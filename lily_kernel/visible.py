"""Text from files, folders and models as a person may safely read it: nothing invisible,
nothing that moves the cursor.

Shown as escapes: control and format characters (a newline is `\\n`, an ANSI escape
`\\x1b`, direction marks, zero-width ones), separators and spaces other than the plain one
(no-break spaces), combining marks (a strike-through over the text), unassigned and
private ones; and letters that draw nothing (the Hangul fillers). A terminal, a console
front end or a question then shows exactly what is there: an escape code in a `model:`
value cannot erase the line above it, a newline in a folder name cannot forge a line.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["MAX_SHOWN", "program_output", "shown", "visible", "visible_prose"]

MAX_SHOWN = 120  # characters of one value, as `shown` shows it

_ESCAPED = ("Cc", "Cf", "Zl", "Zp", "Zs", "Mn", "Me", "Cs", "Co", "Cn")
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _char(char: str, quoting: bool, keep: str = "") -> str:
    if quoting and char in '\\"':
        return "\\" + char
    if char != " " and char not in keep and (
            unicodedata.category(char) in _ESCAPED or char in _BLANK_LETTERS):
        return _NAMED.get(char) or char.encode("unicode_escape").decode("ascii")
    return char


def visible(text: str, lines: bool = False) -> str:
    """`text` with every character that is invisible or moves the cursor as its escape;
    plain text (ASCII letters, digits, punctuation, spaces) unchanged. `lines`: text
    whose line breaks and tabs are its own (a script's output) keeps them."""
    if text.isascii() and text.isprintable():
        return text  # the common case, at C speed
    keep = "\n\t" if lines else ""
    return "".join(_char(c, False, keep) for c in text)


# In prose (a model's answer, an error message) only what acts on a terminal or reorders
# the text is shown as escapes: control characters but the line break and tab, and
# format characters (direction marks, zero-width spaces) but the joiners written
# languages and emoji need; letters with combining marks, no-break spaces stay as they are.
_PROSE_KEPT = frozenset("\n\t\u200c\u200d")
# \x00-\x08, \x0b-\x1f and \x7f-\uffff, written as what it is not: the same set, compiled
# in 0.1 ms instead of ~13 (a range to \uffff makes re build a 64K-character charset).
_MAYBE_ACTING = re.compile(r"[^\t\n\x20-\x7e\U00010000-\U0010ffff]")


def visible_prose(text: str) -> str:
    """A model's answer or an error as a console prints it: what a terminal would obey
    (an escape code) or what reorders text (a direction mark) as its escape; nothing
    else changed."""
    if not _MAYBE_ACTING.search(text):
        return text  # plain ASCII text: the common case, at C speed
    return "".join(c.encode("unicode_escape").decode("ascii")
                   if c not in _PROSE_KEPT and unicodedata.category(c) in ("Cc", "Cf")
                   else c for c in text)


# A terminal's escape sequences: CSI (colours, cursor moves, erasing), OSC (titles,
# hyperlinks, the clipboard), and any other two-character escape.
_ESCAPE_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.?",
                              re.DOTALL)
_PROGRAM_KEPT = frozenset("\n\t\r\u200c\u200d")


def program_output(text: str) -> str:
    """What a program printed (a Python run, a command), as the notebook and a console
    may show it: escape sequences removed (colours, and what would move the cursor, set
    the title or the clipboard), other control characters as escapes; line breaks, tabs
    and carriage returns (a progress bar) kept."""
    text = _ESCAPE_SEQUENCE.sub("", text)
    if not _MAYBE_ACTING.search(text):
        return text
    return "".join(c.encode("unicode_escape").decode("ascii")
                   if c not in _PROGRAM_KEPT and unicodedata.category(c) in ("Cc", "Cf")
                   else c for c in text)


def shown(value: object, limit: int = MAX_SHOWN) -> str:
    """A value as the person reads it in a question: quoted, invisible characters made
    visible, and past `limit` characters shortened in the middle with its full length."""
    text = value if isinstance(value, str) else repr(value)
    escaped = "".join(_char(c, quoting=True) for c in text)
    if len(escaped) <= limit:
        return f'"{escaped}"'
    half = (limit - 3) // 2
    return f'"{escaped[:half]}…{escaped[-half:]}" ({len(text):,} characters)'
