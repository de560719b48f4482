"""The Agent Skills specification's rules (skills/spec.py), and where Lily's reading of
the specification's text differs from the reference validator's (skills-ref)."""

from __future__ import annotations

import pytest

from lily_kernel.skills import parse_skill_document
from lily_kernel.skills.spec import (
    NO_DESCRIPTION,
    NO_FRONTMATTER,
    NO_NAME,
    missing_parts,
    spec_breaks,
    value_breaks,
)
from tests.conftest import FIXTURES

SPEC = FIXTURES / "spec"


def breaks(folder: str, text: str) -> list[str]:
    return spec_breaks(folder, parse_skill_document(text.encode()))


def named(name: str, folder: str | None = None) -> list[str]:
    return breaks(folder or name, f'---\nname: "{name}"\ndescription: d\n---\n')


def test_a_valid_skill_breaks_nothing() -> None:
    assert named("pdf-processing") == []
    assert named("a") == [] and named("x" * 64) == [] and named("v2-beta-3") == []


@pytest.mark.parametrize("name", ["技能", "мой-навык", "café"])
def test_lowercase_letters_of_any_script_are_letters(name: str) -> None:
    """"unicode lowercase alphanumeric characters": as the reference validator reads it."""
    assert named(name) == []


@pytest.mark.parametrize(("name", "shown"), [
    ("НАВЫК", "'Н', 'А', 'В', 'Ы', 'К'"),  # noqa: RUF001 - Cyrillic on purpose
    ("Upper", "'U'"), ("snake_case", "'_'"),
    ("two words", "' '"), ("abcdeG!?.:", "'G', '!', '?', '.', ':'"),
    ("ABCDEFG", "'A', 'B', 'C', 'D', 'E', …"),
])
def test_other_characters_are_named(name: str, shown: str) -> None:
    found = named(name)
    assert found[0] == (f"name '{name}' has {shown}; the Agent Skills specification allows "
                        "only lowercase letters, digits and hyphens")


def test_a_name_can_break_several_rules_one_message_each() -> None:
    assert len(named("-Bad--", "-Bad--")) == 3
    found = named("Some Name", "some-name")
    assert [f.split(";")[0] for f in found] == [
        "name 'Some Name' has 'S', ' ', 'N'",
        "name 'Some Name' differs from the directory name 'some-name'"]


def test_the_folder_is_compared_after_unicode_normalisation() -> None:
    assert named("cafe\u0301", "caf\u00e9") == []  # decomposed name, composed folder


def test_missing_parts_are_told_apart_from_wrong_values() -> None:
    assert breaks("x", "") == [NO_FRONTMATTER]
    assert breaks("x", "Just a body.\n") == [NO_FRONTMATTER]
    assert breaks("x", "---\n---\nBody.\n") == [NO_NAME, NO_DESCRIPTION]
    assert breaks("x", "---\nname: x\ndescription:\n---\n") == [NO_DESCRIPTION]  # null
    doc = parse_skill_document(b"---\nsummary: Lily's own format.\n---\n")
    assert missing_parts(doc) == [NO_NAME, NO_DESCRIPTION]
    assert value_breaks("x", doc.frontmatter) == []  # what the loader warns about: nothing


def test_metadata_values_must_be_strings() -> None:
    text = ("---\nname: m\ndescription: d\nmetadata:\n  a: '1.0'\n  b: 1.0\n  c: true\n"
            "  d:\n  e: 2024-01-01\n  f: {x: y}\n---\n")
    kinds = [b.split(",")[0] for b in breaks("m", text)]
    assert kinds == ["metadata 'b' is a number", "metadata 'c' is true or false",
                     "metadata 'd' is empty", "metadata 'e' is a date",
                     "metadata 'f' is a mapping"]


@pytest.mark.parametrize(("case", "refusal"), [
    ("flow-style", "disallowed JSONesque flow mapping"),
    ("extra-keys", "Unexpected fields in frontmatter: command, summary, version."),
    ("bom", "SKILL.md must start with YAML frontmatter (---)"),
])
def test_lily_keeps_its_reading_where_skills_ref_is_stricter_than_the_text(
        case: str, refusal: str) -> None:
    """docs/skills.md says why: flow style is YAML, the specification forbids no key, and
    a byte order mark is no content."""
    validator = pytest.importorskip("skills_ref.validator")
    folder = SPEC / case
    assert breaks(case, (folder / "SKILL.md").read_text(encoding="utf-8")) == []
    assert any(refusal in error for error in validator.validate(folder))


def test_skills_ref_lets_non_string_metadata_through_lily_does_not() -> None:
    """skills-ref reads every scalar as a string and turns the values it got into strings;
    the specification's metadata maps strings to strings."""
    validator = pytest.importorskip("skills_ref.validator")
    parser = pytest.importorskip("skills_ref.parser")
    folder = SPEC / "metadata-not-string"
    text = (folder / "SKILL.md").read_text(encoding="utf-8")
    assert [b.split(",")[0] for b in breaks(folder.name, text)] == [
        "metadata 'version' is a number", "metadata 'tags' is a list"]
    # There, `version: 1.0` is the string "1.0" and a block list becomes its str().
    block = text.replace("tags: [pdf, forms]", "tags:\n    - pdf")
    assert validator.validate_metadata(parser.parse_frontmatter(block)[0]) == []
