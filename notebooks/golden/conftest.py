"""nbval hooks for the golden transcripts: the harness adds a skill where a cell asks for it."""

from __future__ import annotations

import pytest
from golden_harness import LATE_SKILL_TAG, add_late_skill, remove_late_skill


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    remove_late_skill()  # a leftover from an interrupted run would spoil the transcript


def pytest_runtest_setup(item: pytest.Item) -> None:
    cell = getattr(item, "cell", None)
    if cell is not None and LATE_SKILL_TAG in cell.metadata.get("tags", []):
        add_late_skill()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    remove_late_skill()
