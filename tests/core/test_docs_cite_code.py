"""What the docs say lives in a module is in it: "`check_call` in `tools/policy.py`",
"`execution/protected.py`: `WORKSPACE_READ_ONLY`" and "`skills/ranker.py` (`SkillRanker`)"
each name the module a newcomer opens, and a name moved elsewhere leaves them wrong."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "lily_kernel"
DOCS = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]
NAMES = r"((?:`[A-Za-z_][\w.]*(?:\(\))?`(?:,? (?:and |or )?)?)+)"
MODULE = r"`((?:lily_kernel/)?[\w/]+\.py)`"
# `a`, `b` in `m.py`; `m.py`: `a`; `m.py` (`a`, `b`)
CITED = [re.compile(NAMES + " in " + MODULE), re.compile(MODULE + r"(?::| \() ?" + NAMES)]


def citations(text: str) -> list[tuple[str, str]]:
    """(module, name) for each name a doc says is in a module, outside code blocks."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    found = []
    for pattern in CITED:
        for match in pattern.finditer(prose):
            names, module = ((match.group(1), match.group(2)) if pattern is CITED[0]
                             else (match.group(2), match.group(1)))
            found += [(module.removeprefix("lily_kernel/"), name.removesuffix("()"))
                      for name in re.findall(r"`([\w.]+(?:\(\))?)`", names)]
    return found


def test_citations_are_read_as_a_newcomer_reads_them() -> None:
    text = ("`check_call` in `tools/policy.py`; `execution/limits.py`: `Limits`, `limited`; "
            "`skills/ranker.py` (`SkillRanker`, `RELEVANT_SCORE`)\n```\n`x` in `a.py`\n```")
    assert citations(text) == [("tools/policy.py", "check_call"),
                               ("execution/limits.py", "Limits"),
                               ("execution/limits.py", "limited"),
                               ("skills/ranker.py", "SkillRanker"),
                               ("skills/ranker.py", "RELEVANT_SCORE")]


def all_citations(doc: Path) -> list[tuple[str, str]]:
    """A doc's citations; in docs/architecture.md's table a package's row names its
    modules by file name (`registry.py`: `Tool` in the `tools/` row)."""
    found = citations(doc.read_text())
    for line in doc.read_text().splitlines():
        row = re.match(r"\| `([a-z_]+)/` \|", line)
        if row:
            found += [(f"{row.group(1)}/{module}", name) for module, name in citations(line)
                      if "/" not in module]
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_a_name_cited_in_a_module_is_in_it(doc: Path) -> None:
    missing = []
    for module, name in all_citations(doc):
        path = PACKAGE / module
        if not path.is_file():
            continue  # an example's file, or a path of the tests (not lily_kernel's)
        source = path.read_text()
        if not all(re.search(rf"\b{re.escape(part)}\b", source) for part in name.split(".")):
            missing.append(f"{name} in {module}")
    assert missing == []


def test_the_docs_cite_enough_to_be_checked() -> None:
    cited = [c for doc in DOCS for c in all_citations(doc) if (PACKAGE / c[0]).is_file()]
    assert len(cited) > 100
