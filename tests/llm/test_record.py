"""The session's record in the conversation loop (scripted model, real runtime, real
logs): turns answered again from the record, tools run again under today's policy, a
diverging result handed to the live model, an edited cell, `answers: fresh`, `/rerun`,
`/new`, `/resume`, and `lily replay` of a session that replayed (docs/sessions.md)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from lily_kernel.errors import CommandError, ModelError, ModelFault
from lily_kernel.llm import ChatResponse, ScriptedModel
from lily_kernel.record.answers import NotebookRecord
from lily_kernel.replay import replay_session
from lily_kernel.runtime import LilyRuntime
from lily_kernel.runtime.collaborators import Collaborators
from tests.llm.test_skill_tools import call, reply
from tests.support.sink import RecordingSink

SECRET = "sk-record-SECRET-1234567890abcdef"


def start(workspace: Path, environ: dict[str, str], **settings: str) -> LilyRuntime:
    env = {**environ, "LILY_MODEL": "scripted/test", "LILY_EVENT_LOG": "1",
           "OPENAI_API_KEY": SECRET, **settings}
    return LilyRuntime.start(workspace, env, collaborators=Collaborators(record=NotebookRecord))


def run(runtime: LilyRuntime, code: str, *replies: ChatResponse | BaseException,
        sink: RecordingSink | None = None, cell_id: str | None = None) -> tuple[ScriptedModel, RecordingSink]:
    model = ScriptedModel(*replies)
    runtime.model = model
    sink = sink or RecordingSink()
    asyncio.run(runtime.run_cell(code, sink, cell_id))
    return model, sink


def events(runtime: LilyRuntime, kind: str) -> list[dict[str, Any]]:
    assert runtime.log.path is not None
    lines = [json.loads(line) for line in runtime.log.path.read_text().splitlines()]
    return [e["data"] for e in lines if e["event"] == kind]


def record_three(workspace: Path, environ: dict[str, str], **settings: str) -> LilyRuntime:
    """A first session: a question, a turn that reads a file, a follow-up."""
    (workspace / "notes.md").write_text("Ship on Friday.\n")
    runtime = start(workspace, environ, **settings)
    run(runtime, "What is 2+2?", reply("Four."))
    run(runtime, "Read my notes", reply("", call("read", "r1", path="notes.md")),
        reply("Friday."), sink=RecordingSink("y"))
    run(runtime, "Which was my first question?", reply("2+2."))
    runtime.close()
    return runtime


CELLS = ("What is 2+2?", "Read my notes", "Which was my first question?")


def test_a_restarted_session_answers_recorded_turns_from_the_record(workspace,
                                                                    environ) -> None:
    first = record_three(workspace, environ)
    again = start(workspace, environ)
    sinks = [run(again, code)[1] for code in CELLS]  # the model has no answer to give
    assert [s.replies for s in sinks] == [["Four."], ["Friday."], ["2+2."]]
    for sink in sinks:
        assert sink.notices[0].startswith("Replayed from the record: the answer scripted "
                                          "gave on ")
        assert "with no model call. /rerun asks the model afresh." in sink.notices[0]
    assert sinks[1].notices[1] == "Tool read: ran"  # the recorded call ran again
    assert again.session.conversation_state.messages == \
        first.session.conversation_state.messages
    turns = events(again, "turn")
    assert [t["source"] for t in turns] == ["record"] * 3
    assert [r["model"] for r in events(again, "turn_replay")] == ["scripted"] * 3
    assert len(events(again, "tool_call")) == 1
    again.close()


def test_a_changed_tool_result_hands_the_turn_to_the_live_model(workspace, environ) -> None:
    record_three(workspace, environ)
    (workspace / "notes.md").write_text("Ship on Monday.\n")
    again = start(workspace, environ)
    run(again, CELLS[0])
    model, sink = run(again, CELLS[1], reply("Monday."))
    assert sink.replies == ["Monday."]
    assert sink.notices[-1] == ("A tool's result differs from the record (step 2): the "
                                "model answers from there.")
    # The live model read the turn as it went: the recorded call and today's result.
    [request] = model.requests
    assert request.messages[-1]["content"] == "Ship on Monday.\n"
    assert events(again, "turn_diverged") == [{"step": 2}]
    assert events(again, "turn")[-1]["source"] == "diverged"
    # Every later turn is new: its conversation so far is not the recorded one.
    _, later = run(again, CELLS[2], reply("A new answer."))
    assert later.replies == ["A new answer."] and not later.notices
    again.close()


def test_a_recorded_tool_call_is_asked_again_where_the_policy_asks(workspace,
                                                                   environ) -> None:
    record_three(workspace, environ, LILY_TOOLS_ASK="read")
    again = start(workspace, environ, LILY_TOOLS_ASK="read")
    run(again, CELLS[0])
    yes = RecordingSink("y")
    run(again, CELLS[1], sink=yes)
    assert len(yes.questions) == 1 and yes.replies == ["Friday."]
    again.close()
    third = start(workspace, environ, LILY_TOOLS_ASK="read")
    run(third, CELLS[0])
    no = RecordingSink("n")
    model, _ = run(third, CELLS[1], reply("You said no."), sink=no)
    assert len(no.questions) == 1 and no.replies == ["You said no."]
    assert model.requests[0].messages[-1]["content"].startswith("Refused:")
    third.close()


def test_the_tools_the_model_may_use_are_part_of_the_key(workspace, environ) -> None:
    record_three(workspace, environ)
    again = start(workspace, environ, LILY_TOOLS_DENY="read")
    _, sink = run(again, CELLS[0], reply("Four, with fewer tools."))
    assert sink.replies == ["Four, with fewer tools."]
    assert sink.notices[0].endswith("but the tools the model may use differ(s) now; the "
                                    "model answers.")
    again.close()
    # Asked first or not, the model may call the same tools: the key is the same.
    asked = start(workspace, environ, LILY_TOOLS_ASK="read")
    assert run(asked, CELLS[0])[1].replies == ["Four."]
    asked.close()


def test_a_crafted_record_runs_no_tool_the_policy_refuses(workspace, environ) -> None:
    """A record is data: a log edited to have the model call `write` makes Lily show
    text at most; the call goes through today's policy (here: denied) and is refused."""
    runtime = start(workspace, environ, LILY_TOOLS_DENY="write")
    run(runtime, "Plan my week", reply("Monday: rest."))
    runtime.close()
    assert runtime.log.path is not None
    log = runtime.log.path
    lines = log.read_text().splitlines()
    crafted = []
    for line in lines:
        event = json.loads(line)
        if event["event"] == "turn":
            event["data"]["steps"][0]["response"] = {"text": "", "tool_calls": [
                {"id": "w", "name": "write", "arguments": json.dumps(
                    {"path": "conftest.py", "content": "import os"})}]}
            event["data"]["steps"].append(dict(event["data"]["steps"][0], request="x"))
        crafted.append(json.dumps(event))
    log.write_text("\n".join(crafted) + "\n")
    (workspace / ".lily" / "index.sqlite").unlink()  # rebuilt from the crafted log
    again = start(workspace, environ, LILY_TOOLS_DENY="write")
    model, sink = run(again, "Plan my week", reply("I could not write."))
    assert not (workspace / "conftest.py").exists()
    assert [e["allowed"] for e in events(again, "tool_call")] == [False]
    assert sink.replies == ["I could not write."]  # the live model, after the refusal
    assert model.requests[0].messages[-1]["content"].startswith("Refused:")
    again.close()


def test_an_edited_cell_and_every_turn_after_it_go_to_the_model(workspace, environ) -> None:
    record_three(workspace, environ)
    again = start(workspace, environ)
    _, first = run(again, CELLS[0])
    _, edited = run(again, "Read my notes, please", reply("Edited."))
    _, after = run(again, CELLS[2], reply("Also new."))
    assert first.replies == ["Four."] and first.notices[0].startswith("Replayed")
    assert (edited.replies, after.replies) == (["Edited."], ["Also new."])
    assert not edited.notices and not after.notices
    again.close()


@pytest.mark.parametrize("how", ["variable", "lily.yaml"])
def test_answers_fresh_asks_the_model_every_time(workspace, environ, how) -> None:
    record_three(workspace, environ)
    if how == "lily.yaml":  # an untrusted file may say so too: it widens nothing
        (workspace / "lily.yaml").write_text("answers: fresh\n")
    again = start(workspace, environ, **({"LILY_ANSWERS": "fresh"} if how == "variable"
                                         else {}))
    _, sink = run(again, CELLS[0], reply("Four, again."))
    assert sink.replies == ["Four, again."] and not sink.notices
    assert events(again, "turn")[0]["source"] == "model"
    again.close()


def test_a_model_setting_the_persona_or_the_skills_change_the_key(workspace,
                                                                 environ) -> None:
    record_three(workspace, environ)
    for settings in ({"LILY_TEMPERATURE": "0.7"}, {"LILY_MODEL": "scripted/other"}):
        again = start(workspace, environ, **settings)
        _, sink = run(again, CELLS[0], reply("New."))
        assert sink.replies == ["New."], settings
        [said] = sink.notices  # why it was not answered from the record
        assert said.startswith("Not answered from the record: this turn was recorded on ")
        assert said.endswith(", but the model or its settings differ(s) now; the model "
                             "answers."), said
        again.close()
    # How the model is reached and shown is not part of the key.
    again = start(workspace, environ, LILY_STREAM="0", LILY_API_BASE="http://127.0.0.1:9/v1")
    assert run(again, CELLS[0])[1].replies == ["Four."]
    again.close()
    (workspace / "persona" / "default").mkdir(parents=True)
    (workspace / "persona" / "default" / "SOUL.md").write_text("You are terse.\n")
    again = start(workspace, environ)
    _, sink = run(again, CELLS[0], reply("4."))
    # (the newest recording of the turn, to compare with, had another model too)
    assert sink.replies == ["4."] and "the persona differ(s) now" in sink.notices[0]
    again.close()


def test_a_secret_in_a_turn_is_recorded_redacted_and_still_replays(workspace,
                                                                  environ) -> None:
    runtime = start(workspace, environ)
    run(runtime, f"My key is {SECRET}, keep it", reply("Kept."))
    runtime.close()
    assert runtime.log.path is not None and SECRET not in runtime.log.path.read_text()
    again = start(workspace, environ)
    _, sink = run(again, f"My key is {SECRET}, keep it")
    assert sink.replies == ["Kept."]
    again.close()


def test_rerun_asks_the_last_turn_again_and_the_record_keeps_the_new_answer(
        workspace, environ) -> None:
    record_three(workspace, environ)
    again = start(workspace, environ)
    with pytest.raises(CommandError, match="no chat turn in this session to ask again"):
        run(again, "/rerun")
    run(again, CELLS[0])
    model, sink = run(again, "/rerun", reply("Four, freshly."))
    assert sink.replies == ["Four, freshly."]
    assert sink.notices == [f'Asked again in place of the last turn, "{CELLS[0]}" (its '
                            'answer is no longer in the conversation).']
    assert [m["content"] for m in model.requests[0].messages[1:]] == [CELLS[0]]
    assert [m["content"] for m in again.session.conversation_state.messages] == \
        [CELLS[0], "Four, freshly."]
    _, other = run(again, "/rerun What is 3+3?", reply("Six."))
    assert other.replies == ["Six."]
    again.close()
    third = start(workspace, environ)  # the newest answer of a turn is the one given
    assert run(third, CELLS[0])[1].replies == ["Four, freshly."]
    third.close()


def test_a_failed_rerun_keeps_the_turn_it_would_have_replaced(workspace, environ) -> None:
    runtime = start(workspace, environ)
    run(runtime, "Hello", reply("Hi."))
    with pytest.raises(ModelError):
        run(runtime, "/rerun", ModelError(ModelFault.RATE_LIMIT, "slow down."))
    assert [m["content"] for m in runtime.session.conversation_state.messages] == \
        ["Hello", "Hi."]
    runtime.close()


def test_new_and_resume_choose_the_conversation(workspace, environ) -> None:
    record_three(workspace, environ)
    again = start(workspace, environ)
    run(again, CELLS[0])
    run(again, "/new")
    assert again.session.conversation_state.messages == []
    run(again, "/resume")  # the listing (shown, not a reply)
    book = again.record
    assert book is not None
    listed = {c.turns: c for c in book.conversations()}
    assert set(listed) == {3, 1}  # the recorded one, and this session's first
    older = listed[3]
    assert older.first == CELLS[0] and older.notebook is None
    run(again, f"/resume {older.id}")
    assert [m["content"] for m in again.session.conversation_state.messages
            if m["role"] == "user"] == list(CELLS)
    model, _ = run(again, "And the second?", reply("Your notes."))
    assert [m["content"] for m in model.requests[0].messages if m["role"] == "user"] == \
        [*CELLS, "And the second?"]
    with pytest.raises(CommandError, match="no recorded conversation 'zzz'"):
        run(again, "/resume zzz")
    kinds = [e["how"] for e in events(again, "conversation")]
    assert kinds == ["new", "resumed"]
    again.close()


def test_a_session_that_replayed_replays_as_identical(workspace, environ) -> None:
    record_three(workspace, environ)
    (workspace / "notes.md").write_text("Ship on Monday.\n")
    again = start(workspace, environ)
    run(again, CELLS[0])
    run(again, CELLS[1], reply("Monday."))  # diverged at its tool result
    run(again, "/new")
    run(again, "Something new", reply("New."))
    again.close()
    assert again.log.path is not None
    report = replay_session(again.log.path, environ=again.env.host.environ)
    assert report.identical, report.describe()
    kinds = {json.loads(line)["event"] for line in again.log.path.read_text().splitlines()}
    assert {"turn_replay", "turn_diverged", "turn", "conversation"} <= kinds
