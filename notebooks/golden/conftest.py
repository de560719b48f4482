"""nbval hooks for the golden transcripts: the harness adds a skill where a cell asks for
it, serves the scripted model's replies to the chat transcripts, and skips a golden that
runs code where there is no bubblewrap (failing instead under CI, which must test it)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from golden_harness import (
    LATE_SKILL_TAG,
    SCRIPTED_REPLIES,
    add_late_skill,
    needs_sandbox,
    remove_late_skill,
    remove_sandbox_placeholders,
    script_cell,
    start_model_server,
)

from lily_kernel.execution.sandbox import find_sandbox

_server: list[Any] = []


def pytest_configure(config: pytest.Config) -> None:
    _server.append(start_model_server())  # before any kernel starts: they inherit the env


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    remove_late_skill()  # a leftover from an interrupted run would spoil the transcript
    sandbox = find_sandbox(os.environ)
    if sandbox.available or os.environ.get("CI") == "true":
        return  # under CI a missing sandbox fails each such cell (pytest_runtest_setup)
    skip = pytest.mark.skip(reason=f"no working bubblewrap here ({sandbox.reason})")
    for item in items:
        if needs_sandbox(item.path):
            item.add_marker(skip)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if os.environ.get("CI") == "true" and needs_sandbox(item.path):
        sandbox = find_sandbox(os.environ)
        if not sandbox.available:
            pytest.fail(f"CI must test the sandbox (setup.sh installs bubblewrap): "
                        f"{sandbox.reason}")
    cell = getattr(item, "cell", None)
    if cell is not None and LATE_SKILL_TAG in cell.metadata.get("tags", []):
        add_late_skill()
    if cell is not None and SCRIPTED_REPLIES in cell.metadata:
        script_cell(_server[0], cell)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    remove_late_skill()
    remove_sandbox_placeholders()
    for server in _server:
        server.__exit__(None, None, None)
