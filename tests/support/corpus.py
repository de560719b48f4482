"""The corpus of real SKILL.md files that the corpus tests read.

`../shared/corpus` (1,102 SKILL.md files from nine public repositories, beside the
clone on the project's machines) where it is; on a clone without it,
`tests/fixtures/corpus`: 46 of those files copied unmodified (its SOURCES.md says from
where and under which licence), chosen so that every case the full-corpus tests count
is in it (each rule of the specification broken, macOS-only skills, Composio's MCP
requirement in both YAML spellings, hidden upstream folders, a name shared by two
repositories, CRLF, no frontmatter, the prose `!`s, the references the real-skill tests
read). Figures that depend on the corpus are given for both (`Corpus.pick`).

LILY_TEST_CORPUS=fixtures takes the small one even where ../shared is (to check it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

TESTS = Path(__file__).resolve().parent.parent
FULL = TESTS.parent.parent / "shared" / "corpus"
SMALL = TESTS / "fixtures" / "corpus"
T = TypeVar("T")


@dataclass(frozen=True)
class Corpus:
    root: Path
    full: bool

    def skill_files(self) -> list[Path]:
        return sorted(self.root.glob("*/*/SKILL.md"))

    def repositories(self) -> list[Path]:
        return sorted(p for p in self.root.iterdir() if p.is_dir())

    def pick(self, full: T, small: T) -> T:
        """The figure for this corpus: `full` for ../shared/corpus, else `small`."""
        return full if self.full else small

    def describe(self) -> str:
        return ("../shared/corpus" if self.full
                else f"tests/fixtures/corpus ({len(self.skill_files())} skills)")


def find_corpus() -> Corpus:
    if FULL.is_dir() and os.environ.get("LILY_TEST_CORPUS") != "fixtures":
        return Corpus(FULL, True)
    return Corpus(SMALL, False)


CORPUS = find_corpus()
