"""The frontmatter parser: splitting, and a YAML loader that equals yaml.safe_load."""

from __future__ import annotations

import pytest
import yaml

from lily_kernel.skills.frontmatter import (
    SkillFormatError,
    _split,
    parse_allowed_tools,
    parse_skill_document,
)
from lily_kernel.skills.yaml_frontmatter import _SafeLoader
from tests.support.corpus import CORPUS

TRICKY = [
    "base: &b {x: 1}\nm:\n  <<: *b\n  y: 2\n",  # merge key
    "a: &a [1, 2]\nb: *a\n",  # alias
    "? [1]\n: x\n",  # unhashable complex key
    "1: a\ntrue: b\nnull: c\n",  # non-string keys
    "a: 1\na: 2\n",  # duplicate key, last wins
    "x: !!str 3\ny: !!binary aGk=\n",  # explicit tags
    "d: 2024-01-01\nf: .inf\nn: ~\n",  # implicit types
    "s: 'quoted: yes'\nt: \"esc\\n\"\n",
    "x: !!python/object/apply:os.system ['true']\n",  # refused, as safe_load refuses
]


def _load_both(doc: str) -> tuple[object, object]:
    def attempt(loader: type) -> object:
        try:
            return yaml.load(doc, Loader=loader)
        except yaml.YAMLError as exc:
            return ("error", type(exc).__name__)
    return attempt(yaml.SafeLoader), attempt(_SafeLoader)


@pytest.mark.parametrize("doc", TRICKY)
def test_fast_loader_equals_safe_load(doc: str) -> None:
    expected, actual = _load_both(doc)
    assert repr(actual) == repr(expected)


def test_fast_loader_equals_safe_load_on_the_corpus() -> None:
    files = CORPUS.skill_files()
    for path in files:
        front, _ = _split(path.read_bytes().decode("utf-8-sig").replace("\r\n", "\n"))
        expected, actual = _load_both(front or "")
        assert repr(actual) == repr(expected), path


def test_split_variants() -> None:
    assert _split("---\na: 1\n---\nbody") == ("a: 1\n", "body")
    assert _split("---\n---\n") == ("", "")
    assert _split("--- \na: 1\n---  \n\nbody") == ("a: 1\n", "\nbody")
    assert _split("no fence\n---\n") == (None, "no fence\n---\n")
    assert _split("----\nx\n") == (None, "----\nx\n")
    with pytest.raises(SkillFormatError, match="never closed"):
        _split("---\na: 1\n")


def test_tool_names_of_entries_take_the_name_part_in_lower_case() -> None:
    from lily_kernel.skills.fields import tool_names_of_entries

    assert tool_names_of_entries(("Read", "Bash(git add:*)", "LIST")) == {"read", "bash", "list"}


def test_allowed_tools_forms() -> None:
    assert parse_allowed_tools("Read Grep  Bash(git add:*)") == ("Read", "Grep", "Bash(git add:*)")
    assert parse_allowed_tools("Read, Grep, Glob") == ("Read", "Grep", "Glob")
    assert parse_allowed_tools(["Read", "Bash(ls)"]) == ("Read", "Bash(ls)")
    assert parse_allowed_tools(None) is None


def test_empty_frontmatter_and_body_only() -> None:
    doc = parse_skill_document(b"---\n---\nJust a body.\n")
    assert doc.frontmatter.summary is None and doc.body == "Just a body.\n"


@pytest.mark.parametrize(("text", "message"), [
    ("summary: 3", "key 'summary' has the wrong type: expected a string (got int)"),
    ("requires_tools: [read, 2]",
     "key 'requires_tools.1' has the wrong type: expected a string (got int)"),
    ("allowed-tools: {a: 1}", "key 'allowed-tools' has the wrong type: expected a string or a "
     "list of strings (got dict)"),
    ("disable-model-invocation: 'yes'",
     "key 'disable-model-invocation' has the wrong type: expected true or false (got str)"),
    ("eligibility: {oss: [linux]}", "key 'eligibility.oss' is not a known key"),
    ("metadata: {openclaw: {requires: {bins: x}}}",
     "key 'metadata.openclaw.requires.bins' has the wrong type: expected a list of strings "
     "(got str)"),
])
def test_type_problems_name_the_key_and_the_types(text: str, message: str) -> None:
    with pytest.raises(SkillFormatError) as err:
        parse_skill_document(f"---\n{text}\n---\n".encode())
    assert str(err.value) == message


def test_unknown_keys_are_kept_and_known_ones_typed() -> None:
    doc = parse_skill_document(b"---\nrequires_tools: [read]\nx-custom: 1\n---\n")
    assert doc.frontmatter.requires_tools == ("read",)
    assert doc.extra == {"x-custom": 1}
