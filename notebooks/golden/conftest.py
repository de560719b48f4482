"""nbval hooks for the golden transcripts: the harness adds a skill where a cell asks for
it, and serves the scripted model's replies to the chat transcript."""

from __future__ import annotations

from typing import Any

import pytest
from golden_harness import (
    LATE_SKILL_TAG,
    SCRIPTED_REPLIES,
    add_late_skill,
    remove_late_skill,
    script_cell,
    start_model_server,
)

_server: list[Any] = []


def pytest_configure(config: pytest.Config) -> None:
    _server.append(start_model_server())  # before any kernel starts: they inherit the env


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    remove_late_skill()  # a leftover from an interrupted run would spoil the transcript


def pytest_runtest_setup(item: pytest.Item) -> None:
    cell = getattr(item, "cell", None)
    if cell is not None and LATE_SKILL_TAG in cell.metadata.get("tags", []):
        add_late_skill()
    if cell is not None and SCRIPTED_REPLIES in cell.metadata:
        script_cell(_server[0], cell)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    remove_late_skill()
    for server in _server:
        server.__exit__(None, None, None)
