"""The real corpus (../shared/corpus, 1,102 SKILL.md files): nothing crashes, nearly all load."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest

from lily_kernel.skills import DiagnosticKind, Host, LoadRules, SkillRoot, load_snapshot
from tests.conftest import SHARED

CORPUS = SHARED / "corpus"


class EveryVariable(Mapping[str, str]):
    """An environment in which every variable is set."""

    def __getitem__(self, key: str) -> str:
        return "set"

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not present")


def test_every_corpus_skill_loads_or_is_excluded_with_a_reason() -> None:
    repos = sorted(p for p in CORPUS.iterdir() if p.is_dir())
    roots = tuple(SkillRoot("workspace", str(r), True) for r in repos)
    # A host that has every binary and variable: only format problems can exclude.
    host = Host(platform="linux", environ=EveryVariable(), which=lambda name: "/usr/bin/" + name)
    files = sorted(CORPUS.glob("*/*/SKILL.md"))
    assert len(files) == 1102
    loaded = available = 0
    other_os: list[str] = []
    for repo in roots:
        snap = load_snapshot((repo,), LoadRules(), host)
        available += len(snap.skills)
        excluded = [d for d in snap.diagnostics if d.excludes]
        loaded += len(snap.skills) + len(excluded)
        for diag in excluded:
            # Only a host condition can exclude a corpus skill, never its format.
            assert diag.kind is DiagnosticKind.INELIGIBLE, diag
            assert diag.reason.startswith("requires os darwin"), diag
            other_os.append(diag.skill)
    assert loaded == len(files)  # every file accounted for: loaded or excluded with a reason
    # No print past pytest's capture: it broke the progress line. The figures are here.
    assert available == len(files) - len(other_os)
    assert len(other_os) <= 10, f"{available} of {len(files)} available; macOS-only: {other_os}"
