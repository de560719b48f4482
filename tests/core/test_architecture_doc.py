"""docs/architecture.md against the code: its drawing, "may import" table and core list are
what docs/generate_architecture.py makes from the layering test's tables, every part of
lily_kernel is in them, every event kind is in its list, every file it names exists, every
code name it cites (outside its code examples) is in the code, and every module it draws is
real."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from lily_kernel.events import EVENT_KINDS
from tests.core.test_layering import ALLOWED

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "lily_kernel"
DOC = REPO / "docs" / "architecture.md"
# A code name: an identifier, dotted or not, written as code (`Turn.run`, `check_call`).
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?")
PATH = re.compile(r"(?:[a-z_]+/)*[a-z_]+\.py")


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "generate_architecture", REPO / "docs" / "generate_architecture.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATOR = _generator()


def test_the_drawing_and_table_are_the_layering_tests() -> None:
    """Change ALLOWED (or CORE) in tests/core/test_layering.py, or add a part, and this
    fails until the doc is made again."""
    text = DOC.read_text()
    assert GENERATOR.generate(text) == text, (
        f"docs/architecture.md differs from tests/core/test_layering.py's tables: "
        f"run `{GENERATOR.COMMAND}`")


def test_every_part_of_lily_kernel_is_drawn_once_and_has_a_row() -> None:
    parts = {p.name.removesuffix(".py") for p in PACKAGE.iterdir()
             if (p.suffix == ".py" or (p / "__init__.py").is_file())}
    assert parts == set(ALLOWED), (
        "ALLOWED (tests/core/test_layering.py) needs a row per part of lily_kernel, no more")
    drawing = GENERATOR.region(DOC.read_text(), "drawing")
    placed = re.findall(r"^ *(?:\d+ +)?(\S+?)\*? ─▶", drawing, flags=re.M)
    bottom = re.search(r"^ +0 +(.*)$", drawing, flags=re.M)
    assert bottom
    placed += [name.rstrip("*") for name in bottom.group(1).split()]
    assert sorted(placed) == sorted(GENERATOR.label(p) for p in parts)
    table = GENERATOR.described(DOC.read_text())
    assert set(table) == {GENERATOR.label(p) for p in parts}
    assert not [label for label, what in table.items() if "no docstring" in what]


def test_layers_put_each_part_above_what_it_may_import() -> None:
    allowed = {"edge": {"core", "base"}, "core": {"base"}, "base": set()}
    assert GENERATOR.layers(allowed) == {"edge": 2, "core": 1, "base": 0}
    # The arrow edge -> base is not drawn: edge reaches base through core.
    assert GENERATOR.direct(allowed, "edge") == ["core"]
    assert GENERATOR.direct(allowed, "core") == ["base"]
    # Two parts that may import each other share a layer, and the drawing says so.
    looped = {"top": {"a", "b"}, "a": {"b", "base"}, "b": {"a"}, "base": set()}
    assert GENERATOR.layers(looped) == {"top": 2, "a": 1, "b": 1, "base": 0}
    assert GENERATOR.direct(looped, "top") == ["a", "b"]
    assert GENERATOR.cycles(looped) == [["a", "b"]]


def test_a_new_part_is_described_by_its_docstring_until_the_doc_says_more() -> None:
    allowed: dict[str, set[str]] = {"visible": set()}
    rows = GENERATOR.render_table(allowed, {}).splitlines()
    [visible] = [row for row in rows if row.startswith("| `visible.py` |")]
    assert visible == ("| `visible.py` | Text from files, folders and models as a person may "
                       "safely read it: nothing invisible, nothing that moves the cursor. | — |")
    written = GENERATOR.render_table(allowed, {"visible.py": "what the doc says"})
    assert "| `visible.py` | what the doc says | — |" in written.splitlines()


def test_a_module_the_row_does_not_name_is_added_with_its_docstring() -> None:
    """A module added to a package is in the table the day it lands: its docstring's
    first sentence, until someone writes better in the row."""
    added = GENERATOR.unnamed("events", "the log (`log.py`), the record's kinds (`turns.py`), "
                              "the others (`model_kinds.py`, `tool_kinds.py`, `change_kinds.py`)")
    assert added == ("; `kinds.py`: every kind of event a session logs, declared once "
                     "(events/log.py writes them)")
    assert GENERATOR.unnamed("events", "`kinds.py`, `log.py`, `turns.py`, `model_kinds.py`, "
                                       "`tool_kinds.py`, `change_kinds.py`") == ""
    assert GENERATOR.unnamed("errors", "") == ""  # a module part has no modules


def test_a_doc_without_its_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="needs the drawing markers"):
        GENERATOR.generate("# Architecture\n")


def test_the_event_list_names_every_kind() -> None:
    """Every kind `events/` declares is in the Events section's list (three were missing)."""
    text = DOC.read_text()
    events = text[text.index("## Events"):]
    missing = [kind for kind in EVENT_KINDS if f"`{kind}`" not in events]
    assert len(EVENT_KINDS) > 20
    assert missing == []


def _prose() -> str:
    """The doc without its fenced blocks (the example tool is not Lily's code)."""
    return re.sub(r"```.*?```", "", DOC.read_text(), flags=re.S)


def _cited() -> list[str]:
    return re.findall(r"`([^`\n]+)`", _prose())


def _source() -> str:
    return "\n".join(p.read_text() for p in PACKAGE.rglob("*.py"))


def test_every_file_the_doc_names_exists() -> None:
    paths = [c for c in _cited() if PATH.fullmatch(c)]
    assert len(paths) > 30
    files = {f.relative_to(REPO).as_posix()
             for top in ("lily_kernel", "tests", "benchmarks") for f in (REPO / top).rglob("*.py")}
    # A package's row names its modules by file name (`fields.py` in the `skills/` row).
    missing = [p for p in paths
               if not any(f == f"lily_kernel/{p}" or f == p or f.endswith(f"/{p}")
                          for f in files)]
    assert missing == []


def test_every_code_name_the_doc_cites_is_in_the_code() -> None:
    """Names that look like code (with an underscore, a dot or a capital) must appear in
    lily_kernel as a word: a renamed or removed function leaves the doc wrong."""
    words = set(re.findall(r"\w+", _source()))  # each part must be a whole word there
    names = {c.removesuffix("()") for c in _cited() if NAME.fullmatch(c) and not PATH.fullmatch(c)
             and ("_" in c or "." in c or c[0].isupper())}
    assert len(names) > 40
    missing = sorted(n for n in names if not set(n.split(".")) <= words)
    assert missing == []


def test_the_turn_engine_is_drawn_with_the_modules_it_names() -> None:
    text = DOC.read_text()
    drawing = text[text.index("## The turn engine"):text.index("### Adding a tool")]
    for module in re.findall(r"runtime/[a-z_]+\.py", drawing):
        assert (PACKAGE / module).is_file(), module
    assert {"runtime/turn.py", "runtime/tool_gate.py", "runtime/skill_choice.py"} <= set(
        re.findall(r"runtime/[a-z_]+\.py", drawing))
