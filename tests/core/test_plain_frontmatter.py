"""Frontmatter of plain `key: words` lines is read without PyYAML (plain_frontmatter.py):
whatever it reads, it reads exactly as `yaml.safe_load` does, and it gives way to the
loader for everything else."""

from __future__ import annotations

import itertools

import pytest
import yaml

from lily_kernel.skills.frontmatter import _split
from lily_kernel.skills.plain_frontmatter import parse_plain_frontmatter
from lily_kernel.skills.yaml_frontmatter import _SafeLoader
from tests.support.corpus import CORPUS


def _safe_load(text: str) -> object:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return ("error", type(exc).__name__)


def _frontmatters() -> list[tuple[str, str]]:
    found = []
    for path in CORPUS.skill_files():
        text = path.read_bytes().decode("utf-8-sig")
        front, _ = _split(text.replace("\r\n", "\n") if "\r" in text else text)
        if front is not None:
            found.append((str(path), front))
    return found


def test_every_frontmatter_of_the_corpus_it_reads_is_what_yaml_reads() -> None:
    taken = 0
    for path, front in _frontmatters():
        plain = parse_plain_frontmatter(front)
        if plain is None:
            continue
        taken += 1
        assert repr(plain) == repr(_safe_load(front)), path  # same keys, order, types
        assert repr(plain) == repr(yaml.load(front, Loader=_SafeLoader)), path
    # Most of the corpus is read by it: 981 of the full corpus's 1,100 frontmatters, 31
    # of the small one's 44.
    assert taken >= CORPUS.pick(full=981, small=31), taken


# Lines at the edges of what a plain line is: each is read alone, after a plain line,
# and before one; whatever the fast path reads must be what YAML reads.
EDGES = [
    "name: pdf", "description: Fill in PDF forms.", "a: yes", "a: Off", "a: NULL",
    "a: null", "a: ~", "yes: a", "On: a", "null: a", "Null: b", "a: y", "a: n", "y: a",
    "a: 1", "a: 1.5", "a: 2024-01-01", "a: .inf", "a: -x", "a: +1", "a: 0x1F", "a: 1_000",
    "a: b: c", "a: b:", "a: b :c", "a: http://x.io/y", "a: b #c", "a: b# c", "a: C#",
    "a: 'q'", 'a: "q"', "a: [x]", "a: {x: 1}", "a: &x b", "a: *x", "a: !t b", "a: |",
    "a: >", "a: %x", "a: @x", "a: `x`", "a: ?x", "a: b, c", "a: b [c] {d}", "a: b & c",
    "a: b * c", "a: b ! c", "a: b | c", "a: b > c", "a: b\tc", "a:\tb", "a: b\t",
    "a: b  ", "a:  b", "a:b", "a:", "a: ", " a: b", "  - x", "- a", "# c", "---", "...",
    "a-b: c", "_a: b", "a_b: c", "1: a", "-a: b", "a.b: c", "a b: c", "A: B",
    "a: é", "a: Überblick", "a: 日本語", "a: emoji 🙂", "a: b\u00a0c", "a: b\u2028c",
    "a: b\u2029c", "a: b\x85c", "a: b\ufeffc", "a: b\x7fc", "a: b\x1bc", "a: b\rc",
    "a: \u00a0b", "a: b\u200bc", "a: ab\u0301", "a: ½", "a: ª", "a: <<", "a: =",
    "<<: a", "=: a", "a: " + "x" * 2000, "k" * 128 + ": v", "k" * 129 + ": v", "",
    'a: "b: c # d"', "a: 'b: c # d'", 'a: "it\'s"', "a: 'say \"hi\"'", 'a: ""', "a: ''",
    'a: "b"  ', 'a: "b" # c', 'a: "b"c', 'a: "b\\n"', 'a: "b\\"c"', "a: 'it''s'",
    "a: 'b\\c'", 'a: "b', "a: 'b", 'a: "  b  "', 'a: "yes"', "a: '3'", 'a: "~"',
    'a: "b\tc"', 'a: "b\u2028c"', 'a: "é 🙂"', 'a: "b"\nc: "d"', 'a: "b\n  c"',
    "a: [b, c-d, e.f, g_h/i]", "a: []", "a: [ ]", "a: [b,c]", "a: [ b , c ]", "a: [b,]",
    "a: [yes]", "a: [b, 1]", "a: [b] # c", "a: [b]  ", "a: [b c]", "a: [b: c]", "a: [[b]]",
    "a: [é]", "a: {b: c}", "a:\n  - b\n  - c", "a:\n- b", "a:\n  - b\n   - c",
    "a:\n  - b\n\n  - c", "a:\n  - b: c", "a:\n  - [b]", "a:\n  - yes", "a:\n  -b",
    "a:\n  b: c\n  d: [e]", "a:\n  b: c\n  b: d", "a:\n  b: c\n    d: e",
    "a:\n  b:\n    c: d", "a:\n  b: c\n  - d", "a:\n  yes: c", "a:\n  b: 'c'",
    "a:\n  b: c\n d: e", "a:\n\tb: c", "a:", "a:\n", "a:  \n  - b", "  a: b\nc: d",
    "a: b\n  - c", "a:\n  b: c\ne:\n  - f", "a:\n  # c\n  - b", "a:\n  - b # c",
    "a: b\n  c", "a: b\nb: c", "a: b\na: c", "a: b\n\nc: d", "a: b\n \nc: d",
]


@pytest.mark.parametrize("line", EDGES)
def test_an_edge_line_is_read_as_yaml_reads_it_or_left_to_yaml(line: str) -> None:
    for text in (line, f"name: x\n{line}\n", f"{line}\nname: x\n"):
        plain = parse_plain_frontmatter(text)
        if plain is not None:
            assert repr(plain) == repr(_safe_load(text)), text


def test_what_only_yaml_can_read_is_left_to_it() -> None:
    assert parse_plain_frontmatter("name: pdf\ndescription: Fill in forms.\n") == {
        "name": "pdf", "description": "Fill in forms."}
    assert parse_plain_frontmatter("a: b  \n\nc:   d e\n") == {"a": "b", "c": "d e"}
    assert parse_plain_frontmatter("a: \"yes: 3 # no\"\nb: ' x '") == {"a": "yes: 3 # no",
                                                                        "b": " x "}
    assert parse_plain_frontmatter("r:\n  mcp: [rube]\nt:\n  - read\n  - write\n") == {
        "r": {"mcp": ["rube"]}, "t": ["read", "write"]}
    for text in ("a: yes", "a: 3", "a: b: c", "a: b #c", "a: b\n  c", "a: b\na: c",
                 "a: [b] # c", "a:\n  b:\n    c: d", "a: b\tc", "a: 'b''s'", 'a: "\\n"',
                 "", "\n", "# a comment\n"):
        assert parse_plain_frontmatter(text) is None, text


def test_every_pair_of_words_yaml_reads_as_a_string_is_read_the_same() -> None:
    words = ["a", "yes", "no", "on", "Off", "null", "true", "1", "1.0", "x:", ":x", "#",
             "x#", "-", "é", "~", "<<", "a:b", ".", "0o7", "TRUE", "nan", "inf", "Yes"]
    for first, second in itertools.product(words, repeat=2):
        text = f"key: {first} {second}\n{first}: {second}\n"
        plain = parse_plain_frontmatter(text)
        if plain is not None:
            assert repr(plain) == repr(_safe_load(text)), text
