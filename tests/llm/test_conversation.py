"""The conversation loop with a scripted model: skills, tools, policy, history, limits."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from lily_kernel.errors import ModelError, ModelFault, ModelNotConfiguredError, StepLimitError
from lily_kernel.llm import ChatResponse, ScriptedModel, ToolCall, Usage
from lily_kernel.prompting import SKILL_FILES_NOTE
from lily_kernel.runtime import LilyRuntime
from lily_kernel.tools import Tool, ToolContext, blocking, default_registry
from tests.conftest import skill_text, write_skill
from tests.support.sink import RecordingSink
from tests.support.waiting import until


@dataclass(frozen=True)
class NoArgs:
    pass


ran: list[str] = []


async def _owner(args: NoArgs, ctx: ToolContext) -> str:
    ran.append("owner_secret")
    return "secret"


def call(tool: str, call_id: str = "c1", **arguments: Any) -> ToolCall:
    return ToolCall(call_id, tool, json.dumps(arguments))


def reply(text: str = "", *calls: ToolCall) -> ChatResponse:
    return ChatResponse(text=text, tool_calls=calls, usage=Usage(5, 3))


@pytest.fixture
def runtime(workspace: Path, environ: dict[str, str]) -> LilyRuntime:
    skills = workspace / "skills"
    write_skill(skills, "echo", skill_text("Echo in uppercase", command="echo"))
    write_skill(skills, "reader", "---\nsummary: Reads only\nallowed-tools: Read\n---\nRead files.\n")
    write_skill(skills, "private", "---\nsummary: p\ndisable-model-invocation: true\n---\nP.\n")
    (workspace / "notes.txt").write_text("note text")
    registry = default_registry()
    registry.register(Tool("owner_secret", "Owner only.", NoArgs, _owner, owner_only=True))
    env = {**environ, "LILY_MODEL": "scripted/test", "LILY_TOOLS_DENY": "write"}
    return LilyRuntime.start(workspace, env, registry=registry)


def run(runtime: LilyRuntime, code: str,
        *replies: ChatResponse | BaseException) -> tuple[RecordingSink, ScriptedModel]:
    model = ScriptedModel(*replies)
    runtime.model = model
    sink = RecordingSink()
    asyncio.run(runtime.run_cell(code, sink))
    return sink, model


def test_plain_reply_streams_then_lands_in_history(runtime: LilyRuntime) -> None:
    sink, model = run(runtime, "hello there", reply("Hi! How can I help?"))
    assert sink.replies == ["Hi! How can I help?"]
    assert sink.streamed and sink.streamed[0] == "Hi! "
    sent = model.requests[0]
    assert sent.messages[0]["role"] == "system"
    assert "\n- echo: Echo in uppercase\n" in sent.messages[0]["content"]
    assert "private" not in sent.messages[0]["content"]  # hidden from the model
    assert sent.messages[-1] == {"role": "user", "content": "hello there"}
    assert [t["function"]["name"] for t in sent.tools] == ["load_skill", "list", "python",
                                                                 "read", "shell"]
    assert runtime.session.conversation_state.messages == [
        {"role": "user", "content": "hello there"},
        {"role": "assistant", "content": "Hi! How can I help?"},
    ]


def test_load_skill_returns_the_body_and_a_second_is_refused(runtime: LilyRuntime) -> None:
    sink, model = run(
        runtime, "shout hello",
        reply("", call("load_skill", "c1", name="echo")),
        reply("", call("load_skill", "c2", name="reader")),
        reply("HELLO"),
    )
    second, third = model.requests[1].messages, model.requests[2].messages
    assert second[-1] == {"role": "tool", "tool_call_id": "c1",
                          "content": "SKILL.md of 'echo':\n\nBody of Echo in uppercase\n\n"
                                         f"({SKILL_FILES_NOTE})\n"}
    assert third[-1]["content"] == ("Refused: the skill 'echo' is already loaded for this "
                                    "request; only one skill can be used per request.")
    assert sink.replies == ["HELLO"]
    assert sink.notices == ["Skill: echo (selected by the model)",
                            "load_skill 'reader': Refused: the skill 'echo' is already loaded "
                            "for this request; only one skill can be used per request."]
    history = runtime.session.conversation_state.messages
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant", "tool",
                                            "assistant"]


@pytest.mark.parametrize(("name", "message"), [
    ("nope", "Refused: no skill named 'nope' in this session."),
    ("private", "Refused: the skill 'private' can only be invoked by the person."),
])
def test_unknown_and_hidden_skills_are_refused(runtime: LilyRuntime, name: str, message: str) -> None:
    _, model = run(runtime, "x", reply("", call("load_skill", name=name)), reply("ok"))
    assert model.requests[1].messages[-1]["content"] == message


def test_denied_and_owner_only_tools_never_run(runtime: LilyRuntime, workspace: Path) -> None:
    ran.clear()
    sink, model = run(
        runtime, "try everything",
        reply("", call("write", "w", path="x.txt", content="x"), call("owner_secret", "o")),
        reply("done"),
    )
    results = [m["content"] for m in model.requests[1].messages if m["role"] == "tool"]
    assert results == ["Refused: tool 'write' is not allowed by the tool policy.",
                       "Refused: tool 'owner_secret' is owner-only: only the person can run it, "
                       "with a command."]
    assert ran == [] and not (workspace / "x.txt").exists()
    assert "Tool write: refused: tool 'write' is not allowed by the tool policy" in sink.notices


def test_allowed_tool_runs_and_active_skill_narrows_tools(runtime: LilyRuntime) -> None:
    _, model = run(
        runtime, "read my notes",
        reply("", call("load_skill", name="reader")),
        reply("", call("read", "r", path="notes.txt"), call("list", "l")),
        reply("Your note says: note text"),
    )
    assert [t["function"]["name"] for t in model.requests[1].tools] == [
        "load_skill", "read", "read_skill_file"]  # the skill's own files stay readable
    results = [m["content"] for m in model.requests[2].messages if m["role"] == "tool"]
    assert results[-2:] == ["note text", "Refused: tool 'list' is not available while the "
                                         "active skill narrows the tools."]


def test_forced_skill_turn_injects_body_and_offers_no_load_skill(runtime: LilyRuntime) -> None:
    sink, model = run(runtime, "/echo make this loud", reply("MAKE THIS LOUD"))
    sent = model.requests[0]
    assert sent.messages[0]["content"].endswith("# Skill: echo\n\nBody of Echo in uppercase\n")
    assert "load_skill" not in [t["function"]["name"] for t in sent.tools]
    assert sent.messages[-1] == {"role": "user", "content": "make this loud"}
    assert sink.replies == ["MAKE THIS LOUD"]


def test_step_limit_stops_with_a_clear_message_and_keeps_history(runtime: LilyRuntime) -> None:
    runtime.session.model_config = replace(runtime.session.model_config, max_steps=2)
    looping = [reply("", call("list", f"l{i}")) for i in range(2)]
    with pytest.raises(StepLimitError) as err:
        run(runtime, "loop forever", *looping)
    assert not isinstance(err.value, ModelError)  # Lily's bound, not a provider fault
    assert "did not finish within 2 steps" in str(err.value)
    assert runtime.session.conversation_state.messages == []


def test_provider_fault_leaves_session_intact(runtime: LilyRuntime) -> None:
    run(runtime, "first", reply("one"))
    before = list(runtime.session.conversation_state.messages)
    with pytest.raises(ModelError, match="rate limit"):
        run(runtime, "second", ModelError(ModelFault.RATE_LIMIT, "model call failed: rate limit"))
    assert runtime.session.conversation_state.messages == before
    _sink, model = run(runtime, "third", reply("three"))
    assert model.requests[0].messages[1:3] == before  # history sent on the next turn


def test_a_stopped_turn_stays_in_the_history_as_far_as_it_was_seen(
        runtime: LilyRuntime) -> None:
    """After stopping an essay, "make it shorter" shortened the answer before it: what
    the person saw of a stopped answer is kept, marked as stopped."""
    streamed: list[bool] = []

    class Slow(ScriptedModel):
        async def complete(self, request, on_text):  # type: ignore[no-untyped-def]
            on_text("An essay that ")
            on_text("goes on")
            streamed.append(True)
            await asyncio.sleep(3600)  # an answer that never ends: only the stop ends it
            raise AssertionError("not reached")

    async def interrupt(text: str) -> None:
        runtime.model, streamed[:] = Slow(), []
        task = asyncio.ensure_future(runtime.run_cell(text, RecordingSink()))
        await until(lambda: streamed, "the model was streaming")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(interrupt("write an essay"))
    assert runtime.session.conversation_state.messages == [
        {"role": "user", "content": "write an essay"},
        {"role": "assistant",
         "content": "An essay that goes on\n\n[The person stopped this answer here.]"}]
    _sink, model = run(runtime, "make it shorter", reply("Short."))
    sent = model.requests[0].messages
    assert sent[-3:-1] == runtime.session.conversation_state.messages[:2]
    assert sent[-1] == {"role": "user", "content": "make it shorter"}


def test_bad_tool_arguments_are_reported_to_the_model(runtime: LilyRuntime) -> None:
    _, model = run(runtime, "x", reply("", ToolCall("c", "read", "{not json")), reply("sorry"))
    assert model.requests[1].messages[-1]["content"].startswith(
        "Error: the arguments are not a JSON object")


def test_no_model_configured(workspace: Path, environ: dict[str, str]) -> None:
    runtime = LilyRuntime.start(workspace, environ)
    with pytest.raises(ModelNotConfiguredError) as err:
        asyncio.run(runtime.run_cell("hello", RecordingSink()))
    assert "set LILY_MODEL" in str(err.value) and "OPENAI_API_KEY" in str(err.value)
    assert runtime.model is None
    # A short first line and a short list, no line long enough to wrap mid-word.
    lines = str(err.value).splitlines()
    assert lines[0] == "no model configured."  # the kernel shows it as "Error: no model..."
    assert max(map(len, lines)) <= 80
    assert sum(line.startswith("- ") for line in lines) >= 2


def test_catalog_over_budget_tells_the_person(workspace: Path, environ: dict[str, str]) -> None:
    for i in range(30):
        write_skill(workspace / "skills", f"skill{i:02d}", skill_text(f"Skill number {i} " * 3))
    runtime = LilyRuntime.start(workspace, {**environ, "LILY_MODEL": "x/y",
                                            "LILY_CATALOG_MAX_CHARS": "1000"})
    sink, model = run(runtime, "hi", reply("hello"))
    notice = next(n for n in sink.notices if "left out of the model's catalog" in n)
    # An entry is `- skill00: ` + a 44-character summary + a newline = 56 characters for
    # skills 0-9 and 59 for skills 10-29 (47-character summaries): 560 + 7 x 59 = 973 of
    # the 1,000 fit, skill17 and the twelve after it do not.
    assert notice.startswith("13 skill(s) left out")
    assert "skill17, " in notice
    assert "skill29" not in model.requests[0].messages[0]["content"]
    assert "skill00" in model.requests[0].messages[0]["content"]


def test_stream_off_sends_one_final_reply(workspace: Path, environ: dict[str, str]) -> None:
    runtime = LilyRuntime.start(workspace, {**environ, "LILY_MODEL": "x/y", "LILY_STREAM": "0"})
    sink, _ = run(runtime, "hi", reply("a longer answer in several words"))
    assert sink.streamed == [] and sink.replies == ["a longer answer in several words"]


def test_a_model_tool_call_passes_the_gate_once(runtime: LilyRuntime,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The policy and the arguments are checked once per call, before the handler."""
    checks: list[str] = []
    real = Tool.parse_arguments

    def counted(self: Tool, arguments: dict[str, Any]) -> Any:
        checks.append(self.name)
        return real(self, arguments)

    monkeypatch.setattr(Tool, "parse_arguments", counted)
    sink, _ = run(runtime, "what is here?", reply("", call("list")), reply("done"))
    assert checks == ["list"]
    assert sink.replies[-1] == "done"


def test_events_for_a_turn(workspace: Path, environ: dict[str, str]) -> None:
    write_skill(workspace / "skills", "echo", skill_text("Echo"))
    runtime = LilyRuntime.start(workspace, {**environ, "LILY_MODEL": "x/y", "LILY_EVENT_LOG": "1"},
                                session_id="t1")
    run(runtime, "go", reply("", call("load_skill", name="echo")), reply("", call("list")),
        reply("done"))
    lines = (workspace / ".lily" / "sessions" / "t1.jsonl").read_text().splitlines()
    events = [(e["event"], e["data"]) for e in map(json.loads, lines)]
    kinds = [k for k, _ in events if k in ("model_call", "tool_call", "skill_invoked",
                                          "skill_loaded")]
    assert kinds == ["model_call", "skill_invoked", "skill_loaded", "tool_call", "model_call",
                     "tool_call", "model_call"]
    calls = [d for k, d in events if k == "model_call"]
    assert [c["outcome"] for c in calls] == ["ok", "ok", "ok"]
    assert calls[0]["prompt_tokens"] == 5 and calls[0]["model"] == "scripted"
    # The answer is recorded once: its text and tool calls, its figures beside them.
    assert set(calls[0]["response"]) == {"text", "tool_calls"}
    assert calls[0]["response"]["tool_calls"][0]["name"] == "load_skill"
    invoked = next(d for k, d in events if k == "skill_invoked")
    assert invoked == {"name": "echo", "mode": "auto", "command": None}


def _selections(workspace: Path, session: str) -> list[dict[str, Any]]:
    lines = (workspace / ".lily" / "sessions" / f"{session}.jsonl").read_text().splitlines()
    return [e["data"] for e in map(json.loads, lines) if e["event"] == "skill_selection"]


def test_a_tool_calling_models_choice_is_a_skill_selection_event(
        workspace: Path, environ: dict[str, str]) -> None:
    """What a model that calls tools chose (load_skill, or nothing), as the declaration's
    events say it; with the catalog over its budget, the shortlist listed with scores."""
    write_skill(workspace / "skills", "echo", skill_text("Echo the words back"))
    for i in range(30):
        write_skill(workspace / "skills", f"skill{i:02d}", skill_text(f"Skill number {i} " * 3))
    environ = {**environ, "LILY_MODEL": "x/y", "LILY_EVENT_LOG": "1"}
    runtime = LilyRuntime.start(workspace, environ, session_id="fits")
    run(runtime, "echo these words", reply("", call("load_skill", name="echo")), reply("ok"))
    run(runtime, "hello", reply("hi"))
    loaded, none = _selections(workspace, "fits")
    assert loaded == {"outcome": "selected", "name": "echo", "detail": None, "reply": "",
                      "shortlist": None, "decided_by": "model",
                      "reason": "the model called load_skill, shown the whole catalog"}
    assert none["outcome"] == "none" and none["name"] is None
    assert none["reason"] == "the model loaded no skill, shown the whole catalog"

    small = LilyRuntime.start(workspace, {**environ, "LILY_CATALOG_MAX_CHARS": "300"},
                              session_id="over")
    run(small, "echo these words", reply("", call("load_skill", name="echo")), reply("ok"))
    (over,) = _selections(workspace, "over")
    assert over["name"] == "echo" and over["shortlist"][0]["name"] == "echo"
    assert over["shortlist"][0]["score"] > 0
    assert over["reason"].endswith("shown the request's shortlist and what else fit the "
                                   "catalog's budget")


def test_a_skill_loaded_in_the_same_message_narrows_the_calls_after_it(
    runtime: LilyRuntime, workspace: Path
) -> None:
    _, model = run(
        runtime, "read and list at once",
        reply("", call("load_skill", "a", name="reader"), call("list", "b"),
              call("read", "c", path="notes.txt")),
        reply("done"),
    )
    results = {m["tool_call_id"]: m["content"] for m in model.requests[1].messages
               if m["role"] == "tool"}
    assert results["b"] == ("Refused: tool 'list' is not available while the active skill "
                            "narrows the tools.")
    assert results["c"] == "note text"


def test_a_forced_skill_narrows_the_tools_from_the_first_step(runtime: LilyRuntime) -> None:
    _, model = run(runtime, "/skill reader show my notes", reply("", call("list", "l")),
                   reply("done"))
    assert [t["function"]["name"] for t in model.requests[0].tools] == ["read", "read_skill_file"]
    assert model.requests[1].messages[-1]["content"] == (
        "Refused: tool 'list' is not available while the active skill narrows the tools.")


@pytest.mark.parametrize("code", ["", "   ", "\n\t \n"])
def test_a_blank_cell_does_nothing(runtime: LilyRuntime, code: str) -> None:
    """As in Python kernels: no model call, no output, no history (bug: it was sent)."""
    sink, model = run(runtime, code)
    assert model.requests == []
    assert (sink.shown, sink.streamed, sink.replies, sink.notices) == ([], [], [], [])
    assert runtime.session.conversation_state.messages == []
def test_arguments_that_are_not_json_are_shown_like_every_call(runtime: LilyRuntime) -> None:
    sink, _ = run(runtime, "x", reply("", ToolCall("c", "read", "{not json")), reply("sorry"))
    assert sink.notices == ["Tool read: not run: its arguments are not a JSON object"]


def test_tools_run_off_the_event_loop(workspace: Path, environ: dict[str, str]) -> None:
    seen: list[bool] = []

    def probe(args: NoArgs, ctx: ToolContext) -> str:
        try:
            asyncio.get_running_loop()
            seen.append(True)
        except RuntimeError:
            seen.append(False)
        return "probed"

    registry = default_registry()
    registry.register(Tool("probe", "Probe.", NoArgs, blocking(probe)))
    runtime = LilyRuntime.start(workspace, {**environ, "LILY_MODEL": "scripted/test"},
                                registry=registry)
    run(runtime, "x", reply("", call("probe")), reply("done"))
    assert seen == [False]  # no event loop in the thread the tool ran in
