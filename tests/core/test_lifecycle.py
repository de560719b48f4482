"""The session's lifecycle (lily_kernel/lifecycle.py): background start, retry, warm-up."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from lily_kernel import lifecycle
from lily_kernel.errors import ConfigError
from lily_kernel.lifecycle import BackgroundRuntime, workspace_from_environment
from lily_kernel.runtime import LilyRuntime
from tests.support.sink import RecordingSink
from tests.support.waiting import wait_until


def test_the_workspace_is_lily_workspace_else_the_working_directory(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert workspace_from_environment({}) == tmp_path
    assert workspace_from_environment({"LILY_WORKSPACE": "/elsewhere"}) == Path("/elsewhere")


def test_a_failed_start_is_reported_then_tried_again(workspace: Path,
                                                     environ: dict[str, str]) -> None:
    attempts: list[int] = []

    def start(path: Path) -> LilyRuntime:
        attempts.append(1)
        if len(attempts) <= 2:  # the start with the kernel, and the first cell's retry
            raise ConfigError("/nb/lily.yaml: key 'modle': unknown key.")
        return LilyRuntime.start(path, environ)

    lily = BackgroundRuntime(workspace, start, warm_up=False)

    async def two_cells() -> RecordingSink:
        with pytest.raises(ConfigError) as err:
            await lily.run_cell("/skills", RecordingSink())
        assert str(err.value) == (
            "Lily could not start this notebook's session: /nb/lily.yaml: key "
            "'modle': unknown key. Fix it and run the cell again (no restart needed).")
        sink = RecordingSink()
        await lily.run_cell("/skills", sink)
        return sink

    assert asyncio.run(two_cells()).shown[0].title.startswith("Skills: 0 available")
    assert len(attempts) == 3


def test_a_bug_at_start_keeps_its_type(workspace: Path) -> None:
    def start(path: Path) -> LilyRuntime:
        raise KeyError("a bug")

    lily = BackgroundRuntime(workspace, start, warm_up=False)
    with pytest.raises(KeyError):
        asyncio.run(lily.run_cell("/skills", RecordingSink()))


def test_only_a_configured_model_is_warmed(workspace: Path, environ: dict[str, str]) -> None:
    assert not LilyRuntime.start(workspace, environ).wants_warm_up()
    configured = LilyRuntime.start(workspace, {**environ, "LILY_MODEL": "openai/x"})
    assert configured.wants_warm_up()


def test_the_warm_up_waits_for_a_quiet_moment(workspace: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lifecycle, "WARM_UP_DELAY", 0.05)
    warmed: list[float] = []

    class Runtime:
        def wants_warm_up(self) -> bool:
            return True

        def warm_up(self) -> None:
            warmed.append(time.monotonic())

        async def run_cell(self, code: str, sink: Any, cell_id: str | None = None) -> None:
            await asyncio.sleep(0.3)  # a long cell: no warm-up while it runs

    lily = BackgroundRuntime(workspace, lambda path: Runtime(), warm_up=True)  # type: ignore[arg-type,return-value]
    lily.wait_started(timeout=10)
    began = time.monotonic()
    asyncio.run(lily.run_cell("slow", RecordingSink()))
    ended = time.monotonic()
    wait_until(lambda: warmed, "the warm-up ran after the cell")
    assert len(warmed) == 1
    assert warmed[0] >= ended or warmed[0] < began  # never while the cell ran
