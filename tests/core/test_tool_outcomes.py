"""Whoever needs to know how a run ended reads the outcome's typed result, never its text:
the python and shell tools' notices and `/python`'s result, given outcomes whose text says
one thing and whose result another."""

from __future__ import annotations

from typing import Any

import pytest

from lily_kernel.commands.python import python_ran
from lily_kernel.errors import CommandError
from lily_kernel.execution.runner import RunResult
from lily_kernel.execution.subkernel import RunReply
from lily_kernel.tools.python import python_reply, python_tool
from lily_kernel.tools.registry import ToolOutcome
from lily_kernel.tools.shell import shell_tool

KEPT = ("it ran longer than the time limit (2 s); it was interrupted, the kernel and its "
        "variables are kept")


def reply(status: Any = "ok", error: str | None = None) -> RunReply:
    return RunReply(status, (), error, 1.0, "0" * 64, 0, timeout=2.0, limit_bytes=1000)


def python_notice(outcome: ToolOutcome) -> str | None:
    announce = python_tool().announce
    assert announce is not None
    return announce({"code": "x"}, outcome)


def test_the_python_notice_reads_how_the_run_ended_from_its_reply() -> None:
    # Text that looks stopped, a reply that ran: no notice (the outputs are in the cell).
    assert python_notice(ToolOutcome("python", "ran", "[stopped: fake]", reply())) is None
    # A reply stopped by its time limit, whatever the text: the notice says why.
    stopped = ToolOutcome("python", "ran", "[ran]", reply("timeout"))
    assert python_notice(stopped) == f"Tool python: stopped: {KEPT}"
    # The code raised: the traceback is in the cell, no notice.
    raised = ToolOutcome("python", "failed", "anything", reply("error", "E: v"))
    assert python_notice(raised) is None
    # Nothing ran: the notice says why.
    refused = ToolOutcome("python", "refused", "the person declined it")
    assert python_notice(refused) == "Tool python: refused: the person declined it"
    assert python_reply(refused) is None


def test_the_shell_notice_says_the_exit_code_of_the_result() -> None:
    announce = shell_tool().announce
    assert announce is not None
    ran = ToolOutcome("shell", "ran", "[exit code 9]\n", RunResult(0, 1.0, "", 0, timeout=30))
    assert announce({"command": "ls"}, ran) == 'Shell "ls": exit code 0 (sandboxed)'
    late = RunResult(None, 1.0, "", 0, timed_out=True, timeout=1.5)
    assert announce({"command": "ls"}, ToolOutcome("shell", "ran", "[exit code 0]", late)) == (
        'Shell "ls": stopped: it ran longer than the time limit (1.5 s) (sandboxed)')
    failed = ToolOutcome("shell", "failed", "the command is empty.")
    assert announce({"command": ""}, failed) == 'Shell "": the command is empty'


def test_python_command_reads_the_reply() -> None:
    assert python_ran(ToolOutcome("python", "ran", "[error: fake]", reply())).error is None
    with pytest.raises(CommandError, match=r"^/python: the code raised E: v\.$"):
        python_ran(ToolOutcome("python", "failed", "[ran]", reply("error", "E: v")))
    with pytest.raises(CommandError) as stopped:
        python_ran(ToolOutcome("python", "ran", "[ran]", reply("timeout")))
    assert str(stopped.value) == f"/python: stopped: {KEPT}."
    with pytest.raises(CommandError, match=r"^/python: refused: no\.$"):
        python_ran(ToolOutcome("python", "refused", "no"))
