"""Models that cannot call tools: the request's shortlist, the declaration among
near-equal matches, the context budget, history trimming and the footer, with a scripted
model (no llama.cpp needed)."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from lily_kernel.errors import ModelError
from lily_kernel.llm import ChatResponse, ScriptedModel, Usage
from lily_kernel.prompting.code_blocks import CODE_RULES
from lily_kernel.runtime import LilyRuntime
from lily_kernel.skills import RELEVANT_SCORE
from tests.conftest import skill_text, write_skill
from tests.support.sink import RecordingSink

# These tests pin what a model without tools reads to choose its skill; `python` denied,
# it is not offered its answer's code as well (that: test_kernel_answer_code.py).
NO_CODE = {"LILY_TOOLS_DENY": "python"}


def reply(text: str, prompt: int = 50, completion: int = 5,
          cost: float | None = None) -> ChatResponse:
    return ChatResponse(text=text, usage=Usage(prompt, completion), cost=cost)


@pytest.fixture
def runtime(workspace: Path, environ: dict[str, str]) -> LilyRuntime:
    skills = workspace / "skills"
    write_skill(skills, "echo", skill_text("Echo in uppercase", command="shout"))
    write_skill(skills, "haiku", skill_text("Write a haiku"))
    write_skill(skills, "private", "---\nsummary: p\ndisable-model-invocation: true\n---\nP.\n")
    write_skill(skills, "tables-clean", skill_text("Clean messy CSV tables"))
    write_skill(skills, "tables-tidy", skill_text("Tidy messy CSV tables"))
    env = {**environ, **NO_CODE, "LILY_MODEL": "scripted/no-tools", "LILY_EVENT_LOG": "1"}
    return LilyRuntime.start(workspace, env, session_id="s1")


def run(runtime: LilyRuntime, code: str, *replies: ChatResponse | BaseException,
        window: int | None = 8192) -> tuple[RecordingSink, ScriptedModel]:
    model = runtime.model
    if model is None:
        model = ScriptedModel(name="tiny", supports_tools=False, context_window=window)
        runtime.model = model
    assert isinstance(model, ScriptedModel)
    model.replies.extend(replies)
    sent_before = len(model.requests)
    sink = RecordingSink()
    asyncio.run(runtime.run_cell(code, sink))
    del model.requests[:sent_before]
    return sink, model


def events(workspace: Path, kind: str) -> list[dict[str, object]]:
    lines = (workspace / ".lily" / "sessions" / "s1.jsonl").read_text().splitlines()
    return [e["data"] for e in map(json.loads, lines) if e["event"] == kind]


NEAR_TIE = "clean and tidy messy csv tables"  # both tables skills score the same


def test_a_clear_best_match_is_selected_without_a_model_step(runtime: LilyRuntime,
                                                             workspace: Path) -> None:
    sink, model = run(runtime, "echo this in uppercase", reply("ECHO THIS"))
    (answer,) = model.requests  # no declaration step: the ranker's best match is clear
    assert answer.tools == [] and answer.json_schema is None
    system = answer.messages[0]["content"]
    # No catalog for such a model, and no word of load_skill.
    assert "load_skill" not in system and "- haiku: " not in system
    assert answer.messages[1] == {"role": "user", "content": "echo this in uppercase"}
    assert len(answer.messages) == 3 and "Body of Echo in uppercase" in answer.messages[2][
        "content"]
    (notice,) = sink.notices
    assert notice.startswith("Skill: echo (best match for this request, score ")
    assert sink.replies == ["ECHO THIS"]
    assert events(workspace, "skill_invoked") == [{"name": "echo", "mode": "auto",
                                                   "command": None}]
    (selection,) = events(workspace, "skill_selection")
    assert (selection["outcome"], selection["name"], selection["decided_by"]) == (
        "selected", "echo", "ranker")
    shortlisted = selection["shortlist"]
    assert isinstance(shortlisted, list) and [e["name"] for e in shortlisted] == ["echo"]
    assert shortlisted[0]["score"] >= RELEVANT_SCORE
    assert str(selection["reason"]).startswith("echo scores ")
    assert [e["step"] for e in events(workspace, "model_call")] == [1]


def test_no_match_answers_without_a_skill_or_a_model_step(runtime: LilyRuntime,
                                                          workspace: Path) -> None:
    sink, model = run(runtime, "hello, how are you?", reply("Hi"))
    (answer,) = model.requests
    assert len(answer.messages) == 2  # system + the message, nothing injected
    assert sink.notices == [] and sink.replies == ["Hi"]
    assert events(workspace, "skill_invoked") == []
    (selection,) = events(workspace, "skill_selection")
    assert (selection["outcome"], selection["decided_by"], selection["shortlist"]) == (
        "none", "ranker", [])
    assert selection["reason"] == "no skill matches the request's words"


def test_near_equal_matches_are_declared_by_the_model(runtime: LilyRuntime,
                                                      workspace: Path) -> None:
    sink, model = run(runtime, NEAR_TIE, reply('{"skill": "tables-tidy"}'), reply("Tidied"))
    select, answer = model.requests
    assert select.json_schema == {
        "type": "object", "properties": {"skill": {"enum": ["tables-clean", "tables-tidy",
                                                            None]}},
        "required": ["skill"], "additionalProperties": False}
    assert select.max_tokens is not None and select.tools == []
    listing = select.messages[-1]["content"]
    assert "- tables-clean: Clean messy CSV tables" in listing
    assert "- tables-tidy: Tidy messy CSV tables" in listing and "echo" not in listing
    # The answer reads what the declaration read, less the listing, then the body.
    assert answer.messages[: len(select.messages) - 1] == select.messages[:-1]
    assert len(answer.messages) == len(select.messages)
    assert "Body of Tidy messy CSV tables" in answer.messages[-1]["content"]
    assert sink.notices == ["Skill: tables-tidy (chosen by the model among near-equal "
                            "matches)"]
    (selection,) = events(workspace, "skill_selection")
    assert (selection["outcome"], selection["decided_by"]) == ("selected", "model")
    assert selection["reply"] == '{"skill": "tables-tidy"}'
    assert [e["step"] for e in events(workspace, "model_call")] == ["select", 1]


def test_offered_code_the_declaration_reads_what_the_answer_reads_first(
        workspace: Path, environ: dict[str, str]) -> None:
    """The answer of a model offered the code block reads the code rules and the worked
    example before the conversation; the declaration reads them too, so a local model's
    answer reads only what differs (it re-read the whole prompt: ~115 s at load 16)."""
    skills = workspace / "skills"
    write_skill(skills, "tables-clean", skill_text("Clean messy CSV tables"))
    write_skill(skills, "tables-tidy", skill_text("Tidy messy CSV tables"))
    env = {**environ, "LILY_MODEL": "scripted/no-tools"}  # (python offered, asked)
    runtime = LilyRuntime.start(workspace, env, session_id="s1")
    _, model = run(runtime, NEAR_TIE, reply('{"skill": "tables-tidy"}'), reply("Tidied"))
    select, answer = model.requests
    assert CODE_RULES in select.messages[0]["content"]
    assert answer.messages[: len(select.messages) - 1] == select.messages[:-1]


def test_a_long_read_before_the_declaration_is_said_first(runtime: LilyRuntime) -> None:
    # The declaration is the first call to read the conversation: a model that says it
    # reads 2,400 tokens anew is announced before it, not only before the answer (the
    # embedded model read for minutes under load with `[*]` alone showing).
    runtime.model = ScriptedModel(name="tiny", supports_tools=False, context_window=8192,
                                  reads=2_400)
    sink, _ = run(runtime, NEAR_TIE, reply('{"skill": "tables-tidy"}'), reply("Tidied"))
    assert sink.notices[:2] == [
        "Reading the conversation first: 2,400 tokens, about 8 s on this machine.",
        "Skill: tables-tidy (chosen by the model among near-equal matches)"]


def test_the_model_may_declare_none_among_near_equal_matches(runtime: LilyRuntime,
                                                             workspace: Path) -> None:
    sink, model = run(runtime, NEAR_TIE, reply('{"skill": null}'), reply("Plain"))
    assert len(model.requests[1].messages) == 2
    assert sink.notices == [] and sink.replies == ["Plain"]
    assert [e["outcome"] for e in events(workspace, "skill_selection")] == ["none"]


def test_a_skill_already_read_is_pointed_to_not_read_again(runtime: LilyRuntime,
                                                            workspace: Path) -> None:
    """The conversation carries each SKILL.md once: a later turn that selects the same,
    unchanged skill gets a line pointing back to it; another skill, or the same one
    changed on disk, is read in full."""

    def bodies(messages: list[dict[str, object]], text: str) -> int:
        return sum(text in str(m.get("content")) for m in messages)

    run(runtime, "echo this in uppercase", reply("LOUD"))
    _, model = run(runtime, "echo that in uppercase too", reply("AGAIN"))
    answer = model.requests[0].messages
    assert bodies(answer, "Body of Echo in uppercase") == 1  # turn 1's, in the history
    assert answer[-1] == {"role": "user", "content": "Follow the SKILL.md of 'echo' above."}
    assert len(events(workspace, "skill_invoked")) == 2

    _, model = run(runtime, "write a haiku about the sea", reply("Poem"))
    assert "Body of Write a haiku" in model.requests[0].messages[-1]["content"]

    write_skill(workspace / "skills", "echo", skill_text("Echo in uppercase, louder"))
    run(runtime, "/reload_skills")
    _, model = run(runtime, "echo once more in uppercase", reply("MORE"))
    answer = model.requests[0].messages
    assert "Body of Echo in uppercase, louder" in answer[-1]["content"]  # changed: in full
    assert bodies(answer, "Body of Echo in uppercase\n") == 1  # the old one, in the history


@pytest.mark.parametrize(("declared", "outcome", "notice"), [
    ('{"skill": "echo"}', "unknown", "no skill named 'echo' in the catalog"),  # not listed
    ('{"skill": "nope"}', "unknown", "no skill named 'nope' in the catalog"),
    ("tables-tidy please", "malformed", "not JSON"),
    ('["tables-tidy"]', "malformed", 'not an object with a "skill" key'),
])
def test_a_declaration_that_is_not_a_choice_falls_back_to_no_skill(
    runtime: LilyRuntime, workspace: Path, declared: str, outcome: str, notice: str,
) -> None:
    sink, model = run(runtime, NEAR_TIE, reply(declared), reply("Plain answer"))
    assert len(model.requests[1].messages) == 2
    assert sink.replies == ["Plain answer"]
    assert len(sink.notices) == 1 and notice in sink.notices[0]
    assert "answering without a skill" in sink.notices[0]
    assert events(workspace, "skill_invoked") == []
    assert [e["outcome"] for e in events(workspace, "skill_selection")] == [outcome]


def test_a_forced_skill_needs_no_declaration(runtime: LilyRuntime, workspace: Path) -> None:
    sink, model = run(runtime, "/shout hi", reply("HI"))
    (only,) = model.requests
    assert only.json_schema is None and only.tools == []
    assert "Body of Echo in uppercase" in only.messages[0]["content"]
    # No word of tools the model is not offered (read_skill_file, run_skill_script).
    assert "read_skill_file" not in only.messages[0]["content"]
    assert sink.replies == ["HI"]
    assert events(workspace, "skill_selection") == []


def test_the_footer_names_model_tokens_window_and_cost(runtime: LilyRuntime) -> None:
    sink, _ = run(runtime, NEAR_TIE, reply('{"skill": null}', 100, 7, cost=0.0),
                  reply("Hi", 120, 30, cost=0.0), window=1000)
    # Two calls (the declaration, the answer): the tokens summed and said so; the share
    # of the window is the last call's (150 of 1,000), not the sum's.
    assert sink.footers == ["tiny · 220 tokens in, 37 out over 2 model calls · 15% of the "
                            "1,000-token context (the last call) · no cost"]


def test_the_footer_leaves_out_what_is_unknown_and_can_be_turned_off(
    workspace: Path, environ: dict[str, str],
) -> None:
    write_skill(workspace / "skills", "echo", skill_text("Echo"))
    runtime = LilyRuntime.start(workspace, {**environ, **NO_CODE, "LILY_MODEL": "x/y"})
    runtime.model = ScriptedModel(reply("Hi", 10, 2, cost=None))  # tools, no window
    sink = RecordingSink()
    asyncio.run(runtime.run_cell("hello", sink))
    assert sink.footers == ["scripted · 10 tokens in, 2 out"]
    quiet = LilyRuntime.start(workspace, {**environ, **NO_CODE, "LILY_MODEL": "x/y", "LILY_FOOTER": "0"})
    quiet.model = ScriptedModel(reply("Hi", 10, 2, cost=0.01))
    sink = RecordingSink()
    asyncio.run(quiet.run_cell("hello", sink))
    assert sink.footers == [None] and sink.replies == ["Hi"]


def test_the_catalog_follows_the_context_window_and_keeps_the_shortlist(
        workspace: Path, environ: dict[str, str]) -> None:
    """A model that calls tools reads the catalog: cut to what its window leaves, in
    snapshot order, but always with the request's best matches (its shortlist)."""
    for i in range(60):
        write_skill(workspace / "skills", f"skill{i:02}",
                    skill_text(f"Does thing {i} " * 4 + f"with word{i}"))
    runtime = LilyRuntime.start(workspace, {**environ, **NO_CODE, "LILY_MODEL": "x/y"})
    runtime.model = ScriptedModel(reply("ok"), name="tools", context_window=2048)
    sink = RecordingSink()
    asyncio.run(runtime.run_cell("hi, please use word57", sink))
    model = runtime.model
    assert isinstance(model, ScriptedModel)
    system = model.requests[0].messages[0]["content"]
    assert len(system) <= 2048 // 2 * 3  # at most half the window (3 characters a token)
    listed = re.findall(r"^- (skill\d\d): ", system, re.MULTILINE)
    assert listed[-1] == "skill57" and "skill56" not in listed  # kept whatever the budget
    assert listed[:-1] == [f"skill{i:02}" for i in range(len(listed) - 1)]  # then in order
    (notice,) = sink.notices
    assert notice.startswith(f"{60 - len(listed)} skill(s) left out")  # the notice agrees
    assert "left out of the model's catalog" in notice and "2,048-token context window" in notice
    assert "They still work with /skill. The request's best matches are listed: skill57." \
        in notice


def test_oldest_complete_turns_are_left_out_to_fit_with_a_notice(runtime: LilyRuntime) -> None:
    long = "word " * 300  # ~1,500 characters: ~500 estimated tokens a message
    for i in range(4):
        run(runtime, f"question {i} {long}", reply(f"answer {i} {long}"), window=3000)
    sink, model = run(runtime, "last question", reply("done"), window=3000)
    answer = model.requests[0].messages
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


def test_a_long_skill_is_read_in_part_and_says_so(workspace: Path,
                                                 environ: dict[str, str]) -> None:
    """For a small window, a long SKILL.md's opening is injected (1/16 of the window),
    with a line saying what was left out; the person is told too. Never silently."""
    write_skill(workspace / "skills", "huge", "---\nsummary: Huge manual of walruses\n---\n"
                + "".join(f"Line {i} about walruses.\n" for i in range(600)))
    write_skill(workspace / "skills", "other", skill_text("Something else"))
    runtime = LilyRuntime.start(workspace, {**environ, **NO_CODE, "LILY_MODEL": "x/y",
                                            "LILY_EVENT_LOG": "1"}, session_id="s1")
    sink, model = run(runtime, "tell me about walruses", reply("plain"), window=2048)
    body = model.requests[0].messages[-1]["content"]
    assert body.startswith("SKILL.md of 'huge':\n\nLine 0 about walruses.\n")
    assert "Line 599" not in body
    opening = body.split("\n\n")[1]
    assert len(opening) <= 2048 // 16 * 3 and opening.endswith("walruses.")  # a whole line
    assert "characters, is left out to fit the model's context window.]" in body
    (notice,) = sink.notices
    assert notice.startswith("Skill: huge (best match") and "less its last" in notice
    assert [e["outcome"] for e in events(workspace, "skill_selection")] == ["selected"]


class SlowMeaning:
    """Sentence vectors that take a while the first time (a cold cache), as the real
    encoder does for many skills; every skill's vector the same, so words decide."""

    def __init__(self) -> None:
        self.encoded = 0

    def skills(self, skills: Sequence[Any], stop: threading.Event | None = None) -> Any:
        import time

        import numpy as np

        time.sleep(0.6)
        self.encoded += len(skills)
        return np.full((len(skills), 4), 0.5, dtype=np.float32)

    def missing(self, skills: Sequence[Any]) -> int:
        return 0 if self.encoded else len(skills)

    def request(self, text: str) -> Any:
        import numpy as np

        return np.full(4, 0.5, dtype=np.float32)


class HeldMeaning(SlowMeaning):
    """SlowMeaning whose encoding waits until the event loop has run beside it: it ends
    only if the loop stays free while it works (by event, whatever the machine's load)."""

    def __init__(self) -> None:
        super().__init__()
        self.encoding, self.loop_ran = threading.Event(), threading.Event()
        self.loop_was_free = False

    def skills(self, skills: Sequence[Any], stop: threading.Event | None = None) -> Any:
        self.encoding.set()
        self.loop_was_free = self.loop_ran.wait(60)
        return super().skills(skills, stop)


def test_a_first_ranking_that_encodes_many_skills_says_so_and_leaves_the_loop_free(
        workspace: Path, environ: dict[str, str]) -> None:
    for i in range(60):
        write_skill(workspace / "skills", f"skill{i:02d}", skill_text(f"Skill number {i}"))
    write_skill(workspace / "skills", "haiku", skill_text("Write a haiku"))
    runtime = LilyRuntime.start(workspace, {**environ, **NO_CODE, "LILY_MODEL": "scripted/no-tools"})
    meaning = HeldMeaning()
    runtime.session.ranker().use_meaning(meaning)
    runtime.model = ScriptedModel(name="tiny", supports_tools=False, context_window=8192)
    runtime.model.replies.extend([reply("an old pond"), reply("again")])

    async def cell_and_ticks(code: str) -> tuple[RecordingSink, int]:
        sink, ticks = RecordingSink(), 0
        cell = asyncio.ensure_future(runtime.run_cell(code, sink))
        while not cell.done():
            await asyncio.sleep(0.02)
            if meaning.encoding.is_set():
                ticks += 1
                meaning.loop_ran.set()  # the loop runs while the encoder works
        await cell
        return sink, ticks

    sink, ticks = asyncio.run(cell_and_ticks("write a haiku about a pond"))
    assert sink.notices[0] == ("Reading what 61 skills are about, once for this machine "
                               "(about 6 s; kept in Lily's cache for every session).")
    assert meaning.loop_was_free and ticks >= 2  # the loop ran all through the encoding
    assert sink.notices[1].startswith("Skill: haiku (best match")
    sink, _ = asyncio.run(cell_and_ticks("another haiku please"))
    assert not any(n.startswith("Reading what") for n in sink.notices)  # once
    assert meaning.encoded == 61
