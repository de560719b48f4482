"""A ranking that encodes many skills, as a session sees it: said beforehand on every path
that ranks (runtime/encoding_notice.py), and stopped with its cell (the cell's `stop`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lily_kernel.llm import ChatResponse, ScriptedModel, Usage
from lily_kernel.runtime import LilyRuntime
from lily_kernel.skills.vectors import CHUNK, SkillVectors
from tests.conftest import skill_text, write_skill
from tests.core.test_vectors import GatedEncoder, rows
from tests.llm.test_declared_selection import SlowMeaning
from tests.support.sink import RecordingSink


def reading(count: int) -> str:
    return (f"Reading what {count} skills are about, once for this machine (about "
            f"{round(count * 0.1)} s; kept in Lily's cache for every session).")


def many_skills(workspace: Path, count: int = 60) -> None:
    for i in range(count):
        write_skill(workspace / "skills", f"skill{i:03d}", skill_text(f"Skill number {i}"))
    write_skill(workspace / "skills", "haiku", skill_text("Write a haiku"))


def cell(runtime: LilyRuntime, code: str) -> RecordingSink:
    sink = RecordingSink()
    asyncio.run(runtime.run_cell(code, sink))
    return sink


def test_skills_with_words_says_first_when_its_ranking_encodes_many_skills(
        workspace: Path, environ: dict[str, str]) -> None:
    many_skills(workspace)
    runtime = LilyRuntime.start(workspace, environ)
    meaning = SlowMeaning()
    runtime.session.ranker().use_meaning(meaning)
    assert cell(runtime, "/skills").notices == []  # the listing ranks nothing
    sink = cell(runtime, "/skills haiku")
    assert sink.notices == [reading(61)]
    (shown,) = sink.shown
    assert shown.title.startswith('Skills for "haiku"') and meaning.encoded == 61
    assert cell(runtime, "/skills haiku").notices == []  # once


def test_a_tool_calling_model_whose_catalog_is_over_budget_says_first_when_it_encodes(
        workspace: Path, environ: dict[str, str]) -> None:
    many_skills(workspace)

    def chat(catalog_max_chars: int) -> tuple[RecordingSink, SlowMeaning]:
        runtime = LilyRuntime.start(workspace, {**environ, "LILY_MODEL": "x/y",
                                                "LILY_CATALOG_MAX_CHARS": str(catalog_max_chars)})
        meaning = SlowMeaning()
        runtime.session.ranker().use_meaning(meaning)
        runtime.model = ScriptedModel(ChatResponse(text="an old pond", usage=Usage(5, 3)))
        assert runtime.model.supports_tools
        sink = cell(runtime, "write a haiku about a pond")
        assert sink.replies == ["an old pond"]
        return sink, meaning

    sink, meaning = chat(1000)  # over budget: the request's best matches are ranked
    assert sink.notices[0] == reading(61)
    assert "skill(s) left out of the model's catalog" in sink.notices[1]
    assert "best matches are listed: haiku" in sink.notices[1] and meaning.encoded == 61
    sink, meaning = chat(100_000)  # the whole catalog fits: no ranking, nothing said
    assert sink.notices == [] and meaning.encoded == 0


def test_a_stopped_cell_stops_encoding_after_the_chunk_in_progress_and_the_next_resumes(
        workspace: Path, environ: dict[str, str], tmp_path: Path) -> None:
    many_skills(workspace, 100)
    runtime = LilyRuntime.start(workspace, environ)
    encoder = GatedEncoder()
    cache = tmp_path / "vectors"
    runtime.session.ranker().use_meaning(
        SkillVectors(cache, encoder=lambda: encoder))  # type: ignore[arg-type,return-value]

    async def stopped() -> RecordingSink:
        sink = RecordingSink()
        task = asyncio.ensure_future(runtime.run_cell("/skills haiku", sink))
        assert await asyncio.to_thread(encoder.started.acquire, True, 5)
        task.cancel()  # the stop button, while the first chunk is encoded
        with pytest.raises(asyncio.CancelledError):
            await task
        encoder.gate.release()  # the chunk in progress ends
        return sink

    # asyncio.run ends once the cell's worker thread has (the executor's shutdown).
    assert asyncio.run(stopped()).notices == [reading(101)]
    assert encoder.batches == [CHUNK] and len(rows(cache)) == CHUNK  # no other chunk began
    for _ in range(5):
        encoder.gate.release()
    sink = cell(runtime, "/skills haiku")
    assert sink.notices == [reading(101 - CHUNK)]  # resumed from what the cache holds
    assert encoder.batches == [CHUNK, CHUNK, CHUNK, 101 - 3 * CHUNK, 1]  # 1: the request
    assert len(rows(cache)) == 101 and sink.shown[0].title.startswith('Skills for "haiku"')
