"""A skill's references and scripts in the conversation loop (scripted model): what is
offered, the approval question and its answers, refusals, events, secrets, interrupts."""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from lily_kernel.llm import ChatResponse, ScriptedModel, ToolCall, Usage
from lily_kernel.runtime import LilyRuntime
from lily_kernel.runtime.collaborators import Collaborators
from lily_kernel.runtime.sink import CellSink
from lily_kernel.runtime.turn import STOPPED_BEFORE
from tests.conftest import FIXTURES
from tests.support.sink import RecordingSink
from tests.support.waiting import until

SECRET = "sk-skill-tools-SECRET-1234567890"
FORMFILL = FIXTURES / "skill_files" / "formfill"


def call(tool: str, call_id: str = "c1", **arguments: Any) -> ToolCall:
    return ToolCall(call_id, tool, json.dumps(arguments))


def reply(text: str = "", *calls: ToolCall) -> ChatResponse:
    return ChatResponse(text=text, tool_calls=calls, usage=Usage(5, 3))


def start(workspace: Path, environ: dict[str, str],
          collaborators: Collaborators | None = None, **settings: str) -> LilyRuntime:
    """A session whose skill lives in the *user* root, not the workspace."""
    user_skills = Path(environ["LILY_HOME"]) / "skills"
    shutil.copytree(FORMFILL, user_skills / "formfill")
    env = {**environ, "LILY_MODEL": "scripted/test", "OPENAI_API_KEY": SECRET,
           "LILY_EVENT_LOG": "1", **settings}
    return LilyRuntime.start(workspace, env, session_id="s1", collaborators=collaborators)


def run(runtime: LilyRuntime, code: str, sink: CellSink,
        *replies: ChatResponse | BaseException) -> ScriptedModel:
    model = ScriptedModel(*replies)
    runtime.model = model
    asyncio.run(runtime.run_cell(code, sink))
    return model


def events(runtime: LilyRuntime, kind: str | None = None) -> list[dict[str, Any]]:
    assert runtime.log.path is not None
    lines = [json.loads(line) for line in runtime.log.path.read_text().splitlines()]
    return [e["data"] for e in lines if kind is None or e["event"] == kind]


def tool_result(model: ScriptedModel, index: int) -> str:
    return str(model.requests[index].messages[-1]["content"])


LOAD = reply("", call("load_skill", "l", name="formfill"))


def test_a_reference_is_read_on_demand_from_the_user_root(workspace, environ) -> None:
    runtime = start(workspace, environ)
    model = run(runtime, "fill my form", RecordingSink(), LOAD,
                reply("", call("read_skill_file", "r", path="references/forms.md")),
                reply("The form has a name and a date."))
    offered = [[t["function"]["name"] for t in r.tools] for r in model.requests]
    assert "read_skill_file" not in offered[0]  # no skill active yet
    assert "read_skill_file" in offered[1] and "run_skill_script" not in offered[1]
    assert "Read `references/forms.md`" in tool_result(model, 1)
    assert tool_result(model, 2) == (FORMFILL / "references" / "forms.md").read_text()
    raw = (FORMFILL / "references" / "forms.md").read_bytes()
    assert events(runtime, "skill_file_read") == [{
        "skill": "formfill", "path": "references/forms.md",
        "sha256": hashlib.sha256(raw).hexdigest(), "size": len(raw)}]


def test_reading_before_any_skill_is_refused(workspace, environ) -> None:
    runtime = start(workspace, environ)
    model = run(runtime, "peek", RecordingSink(),
                reply("", call("read_skill_file", "r", path="references/forms.md")),
                reply("ok"))
    assert tool_result(model, 1) == ("Refused: tool 'read_skill_file' works only while a "
                                     "skill is active (and its allowed-tools and disallowed-tools permit "
                                     "it).")
    assert events(runtime, "skill_file_read") == []


def test_a_forced_skill_can_read_its_files(workspace, environ) -> None:
    runtime = start(workspace, environ)
    model = run(runtime, "/skill formfill for Ada", RecordingSink(),
                reply("", call("read_skill_file", "r", path="{baseDir}/references/forms.md")),
                reply("done"))
    assert tool_result(model, 1).startswith("# Forms")


SCRIPT_CALL = call("run_skill_script", "s", script="scripts/fill_form.py",
                   args=["Ada Lovelace", "2024-05-01"])
QUESTION = ('. Run "scripts/fill_form.py" of skill "formfill"\n'
            '  with arguments "Ada Lovelace", "2024-05-01"\nRun it? [y/N] ')


def test_by_default_scripts_are_not_offered_and_a_call_is_refused_without_asking(
        workspace, environ) -> None:
    runtime = start(workspace, environ)  # allow: "*" does not cover run_skill_script
    sink = RecordingSink("y")
    model = run(runtime, "fill it", sink, LOAD, reply("", SCRIPT_CALL), reply("no"))
    assert "run_skill_script" not in [t["function"]["name"] for t in model.requests[1].tools]
    assert tool_result(model, 2) == ("Refused: tool 'run_skill_script' is not allowed by the "
                                     "tool policy.")
    assert sink.questions == [] and not (workspace / "filled.txt").exists()
    assert events(runtime, "skill_script_run") == []


def test_ask_policy_runs_the_script_after_yes(workspace, environ) -> None:
    runtime = start(workspace, environ, LILY_TOOLS_ASK="run_skill_script")
    sink = RecordingSink("y")
    model = run(runtime, "fill it for Ada", sink, LOAD, reply("", SCRIPT_CALL),
                reply("Filled."))
    assert len(sink.questions) == 1 and sink.questions[0].endswith(QUESTION)
    sandboxed = runtime.services.scripts.sandbox().available
    assert ("NOT sandboxed" in sink.questions[0]) is (not sandboxed)
    assert tool_result(model, 2) == ("[exit code 0]\nfilled the form for Ada Lovelace on "
                                     "2024-05-01\n[files written in the workspace: filled.txt "
                                     "(36 bytes, new)]")
    assert (workspace / "filled.txt").read_text() == "name: Ada Lovelace\ndate: 2024-05-01\n"
    assert sink.replies == ["Filled."]
    [approval] = events(runtime, "approval")
    assert approval == {"tool": "run_skill_script", "question": sink.questions[0],
                        "outcome": "approved"}
    [ran] = events(runtime, "skill_script_run")
    script = FORMFILL / "scripts" / "fill_form.py"
    assert ran["sha256"] == hashlib.sha256(script.read_bytes()).hexdigest()
    assert {k: ran[k] for k in ("skill", "script", "arguments", "exit_code", "outcome",
                                "output_bytes", "sandboxed")} == {
        "skill": "formfill", "script": "scripts/fill_form.py",
        "arguments": ["Ada Lovelace", "2024-05-01"], "exit_code": 0, "outcome": "ran",
        "output_bytes": len("filled the form for Ada Lovelace on 2024-05-01\n"),
        "sandboxed": sandboxed}
    assert ran["duration_ms"] > 0


DECLINED = ("Refused: the person declined running scripts/fill_form.py of skill "
            "'formfill'.")
UNANSWERABLE = ("Refused: running scripts/fill_form.py of skill 'formfill' needs the "
                "person's approval (tools.ask in lily.yaml), and no one can answer here")


@pytest.mark.parametrize(("answer", "expected"), [
    ("n", DECLINED), ("", DECLINED), (None, UNANSWERABLE)])
def test_no_yes_no_run(workspace, environ, answer: str | None, expected: str) -> None:
    runtime = start(workspace, environ, LILY_TOOLS_ASK="run_skill_script")
    sink = RecordingSink(answer)
    model = run(runtime, "fill it", sink, LOAD, reply("", SCRIPT_CALL), reply("ok"))
    assert tool_result(model, 2).startswith(expected)
    assert not (workspace / "filled.txt").exists()
    assert events(runtime, "skill_script_run") == []
    outcome = {"n": "declined", "": "declined", None: "unanswerable"}[answer]
    assert [a["outcome"] for a in events(runtime, "approval")] == [outcome]
    assert any('Script "scripts/fill_form.py": refused' in n for n in sink.notices)


def test_allow_by_name_runs_without_asking(workspace, environ) -> None:
    runtime = start(workspace, environ, LILY_TOOLS_ALLOW="read,run_skill_script")
    sink = RecordingSink()
    model = run(runtime, "fill", sink, LOAD, reply("", SCRIPT_CALL), reply("ok"))
    assert sink.questions == []
    assert tool_result(model, 2).startswith("[exit code 0]")


def test_deny_wins_over_ask(workspace, environ) -> None:
    runtime = start(workspace, environ, LILY_TOOLS_ASK="run_skill_script",
                    LILY_TOOLS_DENY="run_skill_script")
    sink = RecordingSink("y")
    model = run(runtime, "fill", sink, LOAD, reply("", SCRIPT_CALL), reply("ok"))
    assert sink.questions == []
    assert "not allowed by the tool policy" in tool_result(model, 2)


def test_the_script_sees_no_secret_and_the_log_holds_none(workspace, environ) -> None:
    runtime = start(workspace, environ, LILY_TOOLS_ALLOW="run_skill_script")
    model = run(runtime, f"probe it, my key is {SECRET}", RecordingSink(), LOAD,
                reply("", call("run_skill_script", "s", script="scripts/probe.py")),
                reply(f"echo {SECRET}"))
    out = tool_result(model, 2)
    assert "secret variables: none" in out and "lily variables: none" in out
    log = runtime.log.path.read_text()  # type: ignore[union-attr]
    assert SECRET not in log
    assert "[redacted]" in log


def test_an_interrupt_kills_the_script_and_keeps_the_history(workspace, environ) -> None:
    runtime = start(workspace, environ, LILY_TOOLS_ALLOW="run_skill_script",
                    LILY_SCRIPT_TIMEOUT="60")
    runtime.model = ScriptedModel(LOAD, reply("", call("run_skill_script", "s",
                                                        script="scripts/slow.py")))

    async def interrupt() -> None:
        task = asyncio.ensure_future(runtime.run_cell("be slow", RecordingSink()))
        await until((workspace / "slow.pid").exists, "the script started")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(interrupt())
    assert [e["outcome"] for e in events(runtime, "skill_script_run")] == ["interrupted"]
    assert events(runtime, "cell_finished")[-1] == {"status": "interrupted", "error": None}
    # The stopped turn stays, marked as stopped: the person's message, and an answer
    # that had not begun (tools/results are not kept).
    assert runtime.session.conversation_state.messages == [
        {"role": "user", "content": "be slow"},
        {"role": "assistant", "content": STOPPED_BEFORE}]


def test_the_time_limit_is_reported_to_the_model(workspace, environ) -> None:
    runtime = start(workspace, environ, LILY_TOOLS_ALLOW="run_skill_script",
                    LILY_SCRIPT_TIMEOUT="1")
    model = run(runtime, "slow", RecordingSink(), LOAD,
                reply("", call("run_skill_script", "s", script="scripts/slow.py")),
                reply("It took too long."))
    assert tool_result(model, 2).startswith(
        "[stopped: it ran longer than the time limit (1 s)]")
    assert [e["outcome"] for e in events(runtime, "skill_script_run")] == ["timeout"]


def test_without_bubblewrap_the_question_says_not_sandboxed(workspace, environ,
                                                             tmp_path) -> None:
    empty = tmp_path / "empty-path"
    empty.mkdir()
    runtime = start(workspace, environ, LILY_TOOLS_ASK="run_skill_script", PATH=str(empty))
    sink = RecordingSink("y")
    run(runtime, "fill it", sink, LOAD, reply("", SCRIPT_CALL), reply("ok"))
    assert sink.questions == [
        "NOT sandboxed (bubblewrap (bwrap) is not installed): it runs with your "
        "permissions, network and files, can read this kernel's environment (API keys), "
        "and can change Lily's own skills and settings for later sessions" + QUESTION]
    assert [e["sandboxed"] for e in events(runtime, "skill_script_run")] == [False]
    assert (workspace / "filled.txt").exists()


def test_with_bubblewrap_the_run_is_sandboxed(workspace, environ) -> None:
    runtime = start(workspace, environ, LILY_TOOLS_ASK="run_skill_script",
                    PATH="/usr/local/bin:/usr/bin:/bin")
    if not runtime.services.scripts.sandbox().available:
        if __import__("os").environ.get("CI"):
            pytest.fail(f"CI must test the sandbox: {runtime.services.scripts.sandbox().reason}")
        pytest.skip(runtime.services.scripts.sandbox().reason)
    sink = RecordingSink("y")
    run(runtime, "fill it", sink, LOAD, reply("", SCRIPT_CALL), reply("ok"))
    assert sink.questions == ["Sandboxed" + QUESTION]
    assert [e["sandboxed"] for e in events(runtime, "skill_script_run")] == [True]
    assert (workspace / "filled.txt").exists()  # the workspace stays writable


@pytest.mark.parametrize(("answer", "written"), [("yes", True), ("n", False)])
def test_ask_works_for_any_tool(workspace, environ, answer: str, written: bool) -> None:
    runtime = start(workspace, environ, LILY_TOOLS_ASK="write")
    sink = RecordingSink(answer)
    model = run(runtime, "note it", sink,
                reply("", call("write", "w", path="note.txt", content="hi")), reply("ok"))
    assert sink.questions == [
        'Let the model run the tool "write"\n  path: "note.txt"\n  content: "hi"\n'
        "Allow it? [y/N] "]
    assert (workspace / "note.txt").exists() is written
    result = tool_result(model, 1)
    assert result.startswith("wrote 2 characters") if written else result == (
        "Refused: the person declined the call of 'write'.")
