"""docs/architecture.md against the code: every file it names exists, every code name it
cites (outside its code examples) is in the code, and every module it draws is real."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "lily_kernel"
DOC = REPO / "docs" / "architecture.md"
# A code name: an identifier, dotted or not, written as code (`Turn.run`, `check_call`).
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?")
PATH = re.compile(r"(?:[a-z_]+/)*[a-z_]+\.py")


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
    source = _source()
    names = {c.removesuffix("()") for c in _cited() if NAME.fullmatch(c) and not PATH.fullmatch(c)
             and ("_" in c or "." in c or c[0].isupper())}
    assert len(names) > 40
    missing = sorted(n for n in names
                     if not all(re.search(rf"\b{re.escape(part)}\b", source)
                                for part in n.split(".")))
    assert missing == []


def test_the_turn_engine_is_drawn_with_the_modules_it_names() -> None:
    text = DOC.read_text()
    drawing = text[text.index("## The turn engine"):text.index("### Adding a tool")]
    for module in re.findall(r"runtime/[a-z_]+\.py", drawing):
        assert (PACKAGE / module).is_file(), module
    assert {"runtime/turn.py", "runtime/tool_gate.py", "runtime/skill_choice.py"} <= set(
        re.findall(r"runtime/[a-z_]+\.py", drawing))
