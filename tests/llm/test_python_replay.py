"""The session's Python at the runtime level: a turn that runs code, then `lily replay`
running the code again in a fresh subkernel (real bubblewrap, real IPython), identical
or the first divergence; and the runtime's kernel ended with the session."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from lily_kernel.execution.sandbox import find_sandbox
from lily_kernel.replay import replay_session
from lily_kernel.runtime import LilyRuntime
from tests.llm.test_skill_tools import call, events, reply, run
from tests.support.sink import RecordingSink

pytestmark = [pytest.mark.skipif(
    not find_sandbox(os.environ).available and os.environ.get("CI") != "true",
    reason=f"no working bubblewrap here ({find_sandbox(os.environ).reason})"),
    pytest.mark.slow]  # the model's `python` tool starts the sandboxed kernel


def settings(environ: dict[str, str]) -> dict[str, str]:
    return {**environ, "LILY_MODEL": "scripted/test", "LILY_EVENT_LOG": "1",
            "LILY_TOOLS_ALLOW": "python"}


def kernel_of(runtime: LilyRuntime) -> object:
    """The session's running Python kernel, or None (looked up afresh at each call)."""
    return runtime.services.python.running


def start(workspace: Path, environ: dict[str, str]) -> LilyRuntime:
    return LilyRuntime.start(workspace, settings(environ), session_id="py1")


def record(workspace: Path, environ: dict[str, str], code: str) -> Path:
    runtime = start(workspace, environ)
    sink = RecordingSink()
    run(runtime, "count to three", sink, reply("", call("python", "p", code=code)),
        reply("Done."))
    asyncio.run(runtime.run_cell("/python print(total)", RecordingSink()))
    assert kernel_of(runtime) is not None
    runtime.close()
    assert kernel_of(runtime) is None  # the kernel ends with the session
    assert runtime.log.path is not None
    return runtime.log.path


def test_a_turn_that_ran_code_replays_identically(workspace: Path, environ: dict[str, str]
                                                   ) -> None:
    log = record(workspace, environ, "total = 0\nfor i in range(1, 4):\n    total += i\n"
                 "    print(i)\ntotal")
    report = replay_session(log, environ=settings(environ))
    assert report.identical, report.describe()
    assert report.cells == 2


def test_code_whose_output_changed_is_the_first_divergence(
        workspace: Path, environ: dict[str, str]) -> None:
    (workspace / "data.txt").write_text("3\n")
    log = record(workspace, environ, "total = int(open('data.txt').read())\nprint(total)")
    (workspace / "data.txt").write_text("4\n")  # the replay reads another number
    report = replay_session(log, environ=settings(environ))
    assert not report.identical
    assert report.divergence is not None
    assert report.divergence.event == "code_run"
    assert "output_sha256" in report.describe()


def test_the_kernel_is_started_on_first_use_only(workspace: Path, environ: dict[str, str]
                                                 ) -> None:
    runtime = start(workspace, environ)
    sink = RecordingSink()
    run(runtime, "hello", sink, reply("Hi."))
    assert kernel_of(runtime) is None
    asyncio.run(runtime.run_cell("/python 6 * 7", sink))
    assert kernel_of(runtime) is not None
    kinds = [type(o).__name__ for o in sink.outputs]
    assert kinds == ["Code", "RunOutput"]
    assert [e["status"] for e in events(runtime, "code_run")] == ["ok"]
    asyncio.run(runtime.run_cell("/python restart", sink))
    assert kernel_of(runtime) is None
    runtime.close()
