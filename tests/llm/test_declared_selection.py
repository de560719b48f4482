"""Models that cannot call tools: skill selection by declaration, the context budget,
history trimming and the footer, with a scripted model (no llama.cpp needed)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from lily_kernel.errors import ModelError
from lily_kernel.llm import ChatResponse, ScriptedModel, Usage
from lily_kernel.runtime import LilyRuntime
from tests.conftest import skill_text, write_skill
from tests.llm.test_conversation import Sink


def reply(text: str, prompt: int = 50, completion: int = 5,
          cost: float | None = None) -> ChatResponse:
    return ChatResponse(text=text, usage=Usage(prompt, completion), cost=cost)


@pytest.fixture
def runtime(workspace: Path, environ: dict[str, str]) -> LilyRuntime:
    skills = workspace / "skills"
    write_skill(skills, "echo", skill_text("Echo in uppercase", command="shout"))
    write_skill(skills, "haiku", skill_text("Write a haiku"))
    write_skill(skills, "private", "---\nsummary: p\ndisable-model-invocation: true\n---\nP.\n")
    env = {**environ, "LILY_MODEL": "scripted/no-tools", "LILY_EVENT_LOG": "1"}
    return LilyRuntime.start(workspace, env, session_id="s1")


def run(runtime: LilyRuntime, code: str, *replies: ChatResponse | BaseException,
        window: int | None = 8192) -> tuple[Sink, ScriptedModel]:
    model = runtime.model
    if model is None:
        model = ScriptedModel(name="tiny", supports_tools=False, context_window=window)
        runtime.model = model
    assert isinstance(model, ScriptedModel)
    model.replies.extend(replies)
    sent_before = len(model.requests)
    sink = Sink()
    asyncio.run(runtime.run_cell(code, sink))
    del model.requests[:sent_before]
    return sink, model


def events(workspace: Path, kind: str) -> list[dict[str, object]]:
    lines = (workspace / ".lily" / "sessions" / "s1.jsonl").read_text().splitlines()
    return [e["data"] for e in map(json.loads, lines) if e["event"] == kind]


def test_a_declared_skill_is_loaded_and_shares_the_prefix(runtime: LilyRuntime,
                                                          workspace: Path) -> None:
    sink, model = run(runtime, "make it loud", reply('{"skill": "echo"}'), reply("LOUD"))
    select, answer = model.requests
    assert select.tools == [] and answer.tools == []  # no tools for such a model
    assert select.json_schema == {
        "type": "object", "properties": {"skill": {"enum": ["echo", "haiku", None]}},
        "required": ["skill"], "additionalProperties": False}
    assert select.max_tokens is not None
    system = select.messages[0]["content"]
    assert "load_skill" not in system and "\n- haiku: " in system
    # The declaration is the answer's own request with a schema and no question of its
    # own: the answer reads the same system context, history and message, then the body.
    prefix = select.messages
    assert answer.messages[: len(prefix)] == prefix
    assert prefix[-1] == {"role": "user", "content": "make it loud"}
    assert len(answer.messages) == len(prefix) + 1  # the skill's body, nothing else
    assert "Body of Echo in uppercase" in answer.messages[-1]["content"]
    assert sink.notices == ["Skill: echo (selected by the model)"]
    assert sink.replies == ["LOUD"]
    assert events(workspace, "skill_invoked") == [{"name": "echo", "mode": "auto", "command": None}]
    assert [e["outcome"] for e in events(workspace, "skill_selection")] == ["selected"]
    assert [e["step"] for e in events(workspace, "model_call")] == ["select", 1]


def test_declaring_none_answers_without_a_skill(runtime: LilyRuntime, workspace: Path) -> None:
    sink, model = run(runtime, "hello", reply('{"skill": null}'), reply("Hi"))
    assert len(model.requests[1].messages) == 2  # system + the message, nothing injected
    assert sink.notices == [] and sink.replies == ["Hi"]
    assert events(workspace, "skill_invoked") == []
    assert [e["outcome"] for e in events(workspace, "skill_selection")] == ["none"]


def test_a_skill_already_read_is_pointed_to_not_read_again(runtime: LilyRuntime,
                                                            workspace: Path) -> None:
    """The conversation carries each SKILL.md once: a later turn that selects the same,
    unchanged skill gets a line pointing back to it; another skill, or the same one
    changed on disk, is read in full."""

    def bodies(messages: list[dict[str, object]], text: str) -> int:
        return sum(text in str(m.get("content")) for m in messages)

    run(runtime, "make it loud", reply('{"skill": "echo"}'), reply("LOUD"))
    sink, model = run(runtime, "again", reply('{"skill": "echo"}'), reply("AGAIN"))
    answer = model.requests[1].messages
    assert bodies(answer, "Body of Echo in uppercase") == 1  # turn 1's, in the history
    assert answer[-1] == {"role": "user", "content": "Follow the SKILL.md of 'echo' above."}
    assert sink.notices == ["Skill: echo (selected by the model)"]
    assert len(events(workspace, "skill_invoked")) == 2

    _, model = run(runtime, "a poem", reply('{"skill": "haiku"}'), reply("Poem"))
    assert "Body of Write a haiku" in model.requests[1].messages[-1]["content"]

    write_skill(workspace / "skills", "echo", skill_text("Echo louder"))
    run(runtime, "/reload_skills")
    _, model = run(runtime, "once more", reply('{"skill": "echo"}'), reply("MORE"))
    answer = model.requests[1].messages
    assert "Body of Echo louder" in answer[-1]["content"]  # changed: read in full
    assert bodies(answer, "Body of Echo in uppercase") == 1  # the old one, in the history


@pytest.mark.parametrize(("declared", "outcome", "notice"), [
    ('{"skill": "private"}', "unknown", "no skill named 'private' in the catalog"),
    ('{"skill": "nope"}', "unknown", "no skill named 'nope' in the catalog"),
    ("echo please", "malformed", "not JSON"),
    ('["echo"]', "malformed", 'not an object with a "skill" key'),
])
def test_a_declaration_that_is_not_a_choice_falls_back_to_no_skill(
    runtime: LilyRuntime, workspace: Path, declared: str, outcome: str, notice: str,
) -> None:
    sink, model = run(runtime, "hello", reply(declared), reply("Plain answer"))
    assert len(model.requests[1].messages) == 2
    assert sink.replies == ["Plain answer"]
    assert len(sink.notices) == 1 and notice in sink.notices[0]
    assert "answering without a skill" in sink.notices[0]
    assert events(workspace, "skill_invoked") == []
    assert [e["outcome"] for e in events(workspace, "skill_selection")] == [outcome]


def test_a_forced_skill_needs_no_declaration(runtime: LilyRuntime) -> None:
    sink, model = run(runtime, "/shout hi", reply("HI"))
    (only,) = model.requests
    assert only.json_schema is None and only.tools == []
    assert "Body of Echo in uppercase" in only.messages[0]["content"]
    # No word of tools the model is not offered (read_skill_file, run_skill_script).
    assert "read_skill_file" not in only.messages[0]["content"]
    assert sink.replies == ["HI"]


def test_the_footer_names_model_tokens_window_and_cost(runtime: LilyRuntime) -> None:
    sink, _ = run(runtime, "hello", reply('{"skill": null}', 100, 7, cost=0.0),
                  reply("Hi", 120, 30, cost=0.0), window=1000)
    assert sink.footers == ["tiny · 220 tokens in, 37 out · 15% of the 1,000-token context"
                            " · no cost"]


def test_the_footer_leaves_out_what_is_unknown_and_can_be_turned_off(
    workspace: Path, environ: dict[str, str],
) -> None:
    write_skill(workspace / "skills", "echo", skill_text("Echo"))
    runtime = LilyRuntime.start(workspace, {**environ, "LILY_MODEL": "x/y"})
    runtime.model = ScriptedModel(reply("Hi", 10, 2, cost=None))  # tools, no window
    sink = Sink()
    asyncio.run(runtime.run_cell("hello", sink))
    assert sink.footers == ["scripted · 10 tokens in, 2 out"]
    quiet = LilyRuntime.start(workspace, {**environ, "LILY_MODEL": "x/y", "LILY_FOOTER": "0"})
    quiet.model = ScriptedModel(reply("Hi", 10, 2, cost=0.01))
    sink = Sink()
    asyncio.run(quiet.run_cell("hello", sink))
    assert sink.footers == [None] and sink.replies == ["Hi"]


def test_the_catalog_follows_the_context_window(workspace: Path, environ: dict[str, str]) -> None:
    for i in range(60):
        write_skill(workspace / "skills", f"skill{i:02}", skill_text(f"Does thing number {i} " * 4))
    runtime = LilyRuntime.start(workspace, {**environ, "LILY_MODEL": "x/y"})
    sink, model = run(runtime, "hi", reply('{"skill": null}'), reply("ok"), window=2048)
    system = model.requests[0].messages[0]["content"]
    assert len(system) <= 2048 // 2 * 3  # at most half the window (3 characters a token)
    assert "\n- skill00: " in system and "\n- skill59: " not in system
    (notice,) = sink.notices
    listed = re.findall(r"^- (skill\d\d): ", system, re.MULTILINE)
    assert listed == [f"skill{i:02}" for i in range(len(listed))]  # in order, then cut
    assert notice.startswith(f"{60 - len(listed)} skill(s) left out")  # the notice agrees
    assert "left out of the model's catalog" in notice and "2,048-token context window" in notice
    assert f"skill{len(listed):02}, " in notice and "more. They still work with /skill." in notice


def test_oldest_complete_turns_are_left_out_to_fit_with_a_notice(runtime: LilyRuntime) -> None:
    long = "word " * 300  # ~1,500 characters: ~500 estimated tokens a message
    for i in range(4):
        run(runtime, f"question {i} {long}", reply('{"skill": null}'), reply(f"answer {i} {long}"),
            window=3000)
    sink, model = run(runtime, "last question", reply('{"skill": null}'), reply("done"),
                      window=3000)
    answer = model.requests[1].messages
    users = [m["content"][:10] for m in answer if m["role"] == "user"]
    assert users[-1] == "last quest"
    assert users[0].startswith("question") and users[0] != "question 0"
    # Whole turns only: every kept question is followed by its answer.
    kept = [m for m in answer[1:-1]]
    assert [m["role"] for m in kept] == ["user", "assistant"] * (len(kept) // 2)
    assert any("earlier turn(s) left out of what the model reads" in n for n in sink.notices)
    assert any("3,000-token context window" in n for n in sink.notices)
    # The session's own history keeps everything.
    assert len(runtime.session.conversation_state.messages) == 10


def test_a_message_too_long_for_the_window_is_a_clear_error(runtime: LilyRuntime) -> None:
    with pytest.raises(ModelError, match="does not fit the model's 1,000-token context window"):
        run(runtime, "x" * 5000, window=1000)
    assert runtime.session.conversation_state.messages == []


def test_a_skill_too_long_for_the_window_is_not_injected(workspace: Path,
                                                        environ: dict[str, str]) -> None:
    write_skill(workspace / "skills", "huge", "---\nsummary: Huge\n---\n" + "word " * 3000)
    runtime = LilyRuntime.start(workspace, {**environ, "LILY_MODEL": "x/y",
                                            "LILY_EVENT_LOG": "1"}, session_id="s1")
    sink, model = run(runtime, "hi", reply('{"skill": "huge"}'), reply("plain"), window=2048)
    assert len(model.requests[1].messages) == 2  # system + message: no body
    assert sink.replies == ["plain"]
    assert sink.notices == ["Skill selection refused: the SKILL.md of 'huge' does not fit "
                            "the model's 2,048-token context window; answering without a "
                            "skill."]
    assert [e["outcome"] for e in events(workspace, "skill_selection")] == ["too_long"]
    assert events(workspace, "skill_invoked") == []
