"""prompting/runs.py: the one wording of what the model reads about a run, from the run's
facts (execution's RunResult and RunReply, as they are); and no module outside prompting/
reads how a run ended back out of a tool's text."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from lily_kernel.execution.runner import RunResult
from lily_kernel.execution.subkernel import RunReply
from lily_kernel.prompting.runs import (
    cut_output,
    cut_process_output,
    cut_read,
    kernel_status,
    kernel_text,
    no_sandbox_reason,
    not_started_reason,
    outgrown_reason,
    process_status,
    process_text,
    removed_note,
    restarted_note,
    root_workspace_reason,
    stopped_reason,
    traceback_summary,
)
from lily_kernel.tools.registry import ToolOutcome, ToolResult

PACKAGE = Path(__file__).resolve().parents[2] / "lily_kernel"


def reply(status: Any = "ok", outputs: tuple[dict[str, Any], ...] = (), error: str | None = None,
          **facts: Any) -> RunReply:
    return RunReply(status, outputs, error, 12.5, "0" * 64, facts.pop("output_bytes", 0),
                    **facts)


def stream(text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": text}


ZERO = {"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
        "traceback": ["\x1b[0;31mTraceback\x1b[0m", "", "  Cell In[1], line 1", "----> 1 1/0",
                      "ZeroDivisionError: division by zero"]}


def test_a_process_says_its_exit_code_and_what_it_printed() -> None:
    done = RunResult(3, 5.0, "failing\n", 8, timeout=30)
    assert process_text(done) == "[exit code 3]\nfailing\n"
    assert process_text(RunResult(0, 5.0, "  \n", 3)) == "[exit code 0]\n(no output)"
    assert process_status(done) == "exit code 3"


def test_a_process_past_its_time_limit_says_the_limit() -> None:
    killed = RunResult(None, 1500.0, "partial\n", 8, timed_out=True, timeout=1.5)
    assert process_text(killed) == (
        "[stopped: it ran longer than the time limit (1.5 s)]\npartial\n")
    # A recorded run does not hold its limit: the host's is given.
    recorded = RunResult(None, 0.0, "", 0, timed_out=True)
    assert process_status(recorded, 600) == "stopped: it ran longer than the time limit (600 s)"
    # The runner's own method says the same.
    assert killed.for_model(1.5) == process_text(killed)


def test_a_kernel_run_says_how_it_ended_then_its_outputs() -> None:
    shown = {"output_type": "display_data",
             "data": {"text/plain": "<Figure>", "image/png": "iVBO", "text/html": "<b>"}}
    ran = reply(outputs=(stream("root 1.41\n"), shown, {"output_type": "execute_result",
                                                       "data": {"text/plain": "42"}}))
    assert kernel_status(ran) == "ran"
    assert kernel_text(ran, 1000) == (
        "[ran]\nroot 1.41\n<Figure>\n[shown to the person: image/png, text/html]\n42")
    assert kernel_text(reply(), 1000) == "[ran]\n(no output)"


def test_an_error_is_its_name_and_message_then_the_short_traceback() -> None:
    failed = reply("error", (stream("before\n"), ZERO), "ZeroDivisionError: division by zero")
    assert kernel_status(failed) == "error: ZeroDivisionError: division by zero"
    assert kernel_text(failed, 1000) == (
        "[error: ZeroDivisionError: division by zero]\nbefore\n  Cell In[1], line 1\n"
        "----> 1 1/0\nZeroDivisionError: division by zero")


def test_the_traceback_summary_keeps_the_last_entries_without_escapes() -> None:
    assert traceback_summary(ZERO).split("\n") == [
        "  Cell In[1], line 1", "----> 1 1/0", "ZeroDivisionError: division by zero"]
    assert traceback_summary({"output_type": "error", "ename": "KeyError", "evalue": "'x'",
                              "traceback": []}) == "KeyError: 'x'"
    escaped = traceback_summary({"traceback": ["\x1b]52;c;aGk=\x07E: \x1b[31mred\x1b[0m"]})
    assert escaped == "E: red"


@pytest.mark.parametrize(("status", "ended", "said"), [
    ("timeout", False, "it ran longer than the time limit (2 s); it was interrupted, the "
                       "kernel and its variables are kept"),
    ("timeout", True, "it ran longer than the time limit (2 s) and it did not stop when "
                      "interrupted: the kernel was ended, its variables are gone; the next "
                      "run starts a new one"),
    ("output_limit", False, "its output passed the limit of a run (64,000,000 bytes); it was "
                            "interrupted, the kernel and its variables are kept"),
])
def test_a_stopped_run_says_why_and_what_became_of_the_kernel(status: str, ended: bool,
                                                              said: str) -> None:
    stopped = reply(status, (stream("1\n"),), kernel_ended=ended, timeout=2.0,
                    limit_bytes=64_000_000)
    assert stopped_reason(stopped) == said
    assert kernel_text(stopped, 1000) == f"[stopped: {said}]\n1"


def test_interrupted_and_finished_runs_were_not_stopped() -> None:
    assert stopped_reason(reply("interrupted", timeout=2.0)) == ""
    assert stopped_reason(reply("ok", timeout=2.0)) == ""


def test_what_was_cut_is_said_with_its_size() -> None:
    many = reply(outputs=(stream("x" * 50),), dropped=7, output_bytes=12_345_678)
    assert kernel_text(many, 20) == (
        "[ran]\n" + "x" * 20 + "\n[... output truncated: 50 characters]"
        "\n[... 7 more outputs not kept (12,345,678 bytes in all)]")
    assert cut_output("short", 20) == "short"
    assert cut_output("y" * 25, 20) == "y" * 20 + "\n[... output truncated: 25 characters]"
    assert cut_read("z" * 30, 10) == "z" * 10 + "\n[... truncated at 10 characters]"
    assert cut_process_output("w" * 30, 10, 1_000_000) == (
        "w" * 10 + "\n[... output truncated: 1,000,000 bytes in all]")


def test_what_a_run_left_and_the_sandbox_removed() -> None:
    assert removed_note([".x", ".y"], links=True) == (
        "[removed after the run: .x, .y (the sandbox keeps no new dot-entry at the "
        "workspace's top nor new files at Lily's own paths, and its links as they were; "
        "set aside in .lily/removed/)]")
    assert removed_note(["lily.yaml"], links=False) == (
        "[removed after the run: lily.yaml (the sandbox keeps no new dot-entry at the "
        "workspace's top nor new files at Lily's own paths; set aside in .lily/removed/)]")
    assert restarted_note([".env"]) == (
        "[the Python kernel was started again: .env changed in the workspace since it "
        "started, and its sandbox no longer protected it; its variables are gone]")


def test_the_refusals_say_what_cannot_run_and_what_to_do() -> None:
    why = "bubblewrap (bwrap) is not installed"
    assert no_sandbox_reason("code", why) == (
        f"code runs only in the sandbox, and there is none here ({why}); install bubblewrap "
        "(the `bubblewrap` package, e.g. `apt install bubblewrap`) and restart the kernel")
    assert no_sandbox_reason("Python", why) == (
        f"Python runs only in the sandbox, and there is none here ({why}); install bubblewrap "
        "(apt-get install bubblewrap) and restart the kernel")
    assert root_workspace_reason("code") == (
        "the workspace is the root folder (/): nothing run there can be confined to it; "
        "open the notebook from a project folder.")
    assert root_workspace_reason("Python") == (
        "the workspace is the root folder (/): Python cannot be confined to it; open the "
        "notebook from a project folder.")


def test_a_run_that_did_not_start_says_why() -> None:
    assert outgrown_reason([".env", ".git"]) == (
        "nothing ran: .env, .git changed in the workspace after the command was planned, "
        "and the sandbox protects what was there; run it again.")
    assert not_started_reason("'scripts/fill.py'", "Permission denied") == (
        "cannot start 'scripts/fill.py': Permission denied.")


def test_an_outcome_carries_the_runs_typed_result_beside_its_text() -> None:
    raised = reply("error", (ZERO,), "ZeroDivisionError: division by zero")
    failed = ToolOutcome.returned("python", ToolResult("[error: …]", raised, failed=True))
    assert (failed.status, failed.text, failed.result) == ("failed", "[error: …]", raised)
    done = RunResult(0, 1.0, "hi\n", 3, timeout=30)
    ran = ToolOutcome.returned("shell", ToolResult("[exit code 0]\nhi\n", done))
    assert (ran.status, ran.result) == ("ran", done)
    plain = ToolOutcome.returned("read", "text")
    assert (plain.status, plain.text, plain.result) == ("ran", "text", None)
    with pytest.raises(TypeError, match="returned int"):
        ToolOutcome.returned("odd", 3)


# How a run ended is a fact of its result: read from a tool's text, it is parsed back.
_PARSING = ("startswith", "endswith", "partition", "rpartition", "removeprefix",
            "removesuffix", "split", "rsplit", "splitlines")
# Texts that are not a tool's: a question to the person is composed line by line
# (tools/questions.py).
_NOT_TOOL_TEXT = ("question",)


def _text_parsed(source: str) -> list[int]:
    """The lines where a `.text` (a tool outcome's) is tested or cut by its words."""
    return sorted(
        node.lineno for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr in _PARSING and isinstance(node.func.value, ast.Attribute)
        and node.func.value.attr == "text"
        and not (isinstance(node.func.value.value, ast.Name)
                 and node.func.value.value.id in _NOT_TOOL_TEXT))


def test_the_scan_finds_a_tool_text_read_back() -> None:
    source = ('if outcome.status == "failed" and outcome.text.startswith("[error"):\n'
              '    raised = outcome.text.partition("\\n")[0]\n'
              'status = outcome.text.split(chr(10), 1)[0].strip("[]")\n'
              'lines = question.text.split("\\n")\n')
    assert _text_parsed(source) == [1, 2, 3]


def test_no_tool_text_is_parsed_outside_prompting() -> None:
    found = {f"{path.relative_to(PACKAGE)}:{line}"
             for path in sorted(PACKAGE.rglob("*.py"))
             if path.relative_to(PACKAGE).parts[0] != "prompting"
             for line in _text_parsed(path.read_text())}
    assert found == set()
