"""visible.py: what a person reads of text from files, folders and models."""

from __future__ import annotations

import re

from lily_kernel.visible import _MAYBE_ACTING, visible, visible_prose


def test_the_quick_check_of_prose_is_the_set_it_stands_for() -> None:
    """Written as a negated class (compiled in 0.1 ms instead of ~13 at every start), it
    matches exactly the characters of the range it replaced, over all of Unicode."""
    ranges = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\uffff]")
    differ = [hex(code) for code in range(0x110000)
              if bool(_MAYBE_ACTING.match(chr(code))) != bool(ranges.match(chr(code)))]
    assert differ == []


def test_prose_keeps_text_and_escapes_what_a_terminal_would_obey() -> None:
    assert visible_prose("plain text\nwith\tlines") == "plain text\nwith\tlines"
    assert visible_prose("caf\u00e9 \U0001f600") == "caf\u00e9 \U0001f600"
    assert visible_prose("red \x1b[31m and \u202eback") == "red \\x1b[31m and \\u202eback"


def test_a_value_shows_its_line_breaks_as_escapes() -> None:
    assert visible("a\nb") == "a\\nb"
    assert visible("a\nb", lines=True) == "a\nb"
