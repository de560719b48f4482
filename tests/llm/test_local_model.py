"""The embedded model in this process: the real SmolLM2-135M GGUF through llama.cpp, as
Lily's LocalModel drives it (caches, declarations, sampling). Through real kernels:
test_kernel_local_model.py and test_kernel_local_model_alone.py.

They skip only where the `local` extra is not installed (setup.sh installs it). The
model runs on one thread (tests/support/embedded.py says why).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.embedded import NEEDS_THE_MODEL

pytestmark = [NEEDS_THE_MODEL, pytest.mark.slow]  # the real model in this process


def test_follow_ups_and_new_kernels_reuse_what_the_model_read(tmp_path: Path) -> None:
    """In-process, the real model: turn 2 reads only what is new; a second model on the
    same system context restores the saved state instead of reading it again."""
    from lily_kernel.llm.base import ChatRequest
    from lily_kernel.llm.llama_engine import SAVED_PREFIX_MIN
    from lily_kernel.llm.local_files import local_model_file
    from lily_kernel.llm.local_model import LocalModel

    file = local_model_file("local")
    assert file is not None
    system = {"role": "system", "content": "You are Lily, a careful assistant. " * 60}
    turn1 = [system, {"role": "user", "content": "Hello there."}]

    async def ask(model: LocalModel, messages: list[dict[str, Any]]) -> str:
        response = await model.complete(ChatRequest(messages, max_tokens=8), lambda _t: None)
        return response.text

    first = LocalModel(file, prefix_cache=tmp_path, threads=1)
    first.load()
    reply = asyncio.run(ask(first, turn1))
    whole = first.last_evaluated
    assert whole > SAVED_PREFIX_MIN  # the whole prompt was read
    assert len(list(tmp_path.glob("*.kv"))) == 1  # and the system context saved
    turn2 = [*turn1, {"role": "assistant", "content": reply},
             {"role": "user", "content": "Thanks."}]
    asyncio.run(ask(first, turn2))
    assert 0 < first.last_evaluated < 40  # only the new turn (and a re-tokenized edge)

    second = LocalModel(file, prefix_cache=tmp_path, threads=1)
    second.load()
    again = asyncio.run(ask(second, turn1))
    assert second.last_evaluated < 20  # the system context came from the saved state
    assert again == reply  # and gives the same answer as reading it


def test_a_trimmed_history_is_not_read_again(tmp_path: Path) -> None:
    """In-process, the real model: when the oldest turns are left out, the turns kept are
    moved up in the model's cache, not read again; the same turns give the same answer."""
    from lily_kernel.llm.base import ChatRequest
    from lily_kernel.llm.local_files import local_model_file
    from lily_kernel.llm.local_model import LocalModel

    file = local_model_file("local")
    assert file is not None
    system = {"role": "system", "content": "You are Lily, a careful assistant."}
    turns = [[{"role": "user", "content": f"Tell me one fact about the number {n}."},
              {"role": "assistant", "content": f"The number {n} is a number. " * 12}]
             for n in range(6)]
    new = {"role": "user", "content": "And about the number 99?"}
    whole = [system, *(m for turn in turns for m in turn), new]
    trimmed = [system, *(m for turn in turns[3:] for m in turn), new]

    def conversation() -> tuple[LocalModel, str]:
        model = LocalModel(file, prefix_cache=None, threads=1)
        model.load()
        request = ChatRequest(whole, max_tokens=8)
        asyncio.run(model.complete(request, lambda _t: None))
        reply = asyncio.run(model.complete(ChatRequest(trimmed, max_tokens=8), lambda _t: None))
        return model, reply.text

    model, reply = conversation()
    kept = model.engine.tokens(trimmed)  # type: ignore[union-attr]
    new_turn = model.engine.tokens([new])  # type: ignore[union-attr]
    assert len(kept) > 300  # the turns kept are many tokens...
    assert 0 < model.last_evaluated <= len(new_turn) + 8  # ...and only the new one was read
    assert reply.strip()
    assert conversation()[1] == reply  # the same turns, the same state, the same answer


def test_a_declaration_is_chosen_among_the_names_deciding_only_where_they_differ() -> None:
    """In-process, the real model: the declaration is one of the schema's answers exactly
    (a listed name or null), streamed whole, the same every time; the model is asked only
    where the names still open differ, so choosing among 60 names of 12 tokens takes a
    few decode steps. A schema of another shape is constrained by llama.cpp's grammar."""
    from lily_kernel.llm.base import ChatRequest
    from lily_kernel.llm.local_files import local_model_file
    from lily_kernel.llm.local_model import LocalModel
    from lily_kernel.prompting.selection import parse_selection, selection_schema

    file = local_model_file("local")
    assert file is not None
    model = LocalModel(file, prefix_cache=None, threads=1)
    model.load()
    listed = ("haiku", *(f"skill_{i:05d}" for i in range(60)))
    catalog = "\n".join(f"- {name}: Answer as skill {name} says." for name in listed)
    messages = [{"role": "system", "content": f"Skills:\n{catalog}"},
                {"role": "user", "content": "Use skill_00042 for this, please."}]
    reads: list[list[int]] = []  # the batches read after the prompt
    engine = model.engine
    assert engine is not None
    real_read = engine.read

    def read(tokens: list[int], outputs: list[int]) -> Any:
        reads.append(tokens)
        return real_read(tokens, outputs)

    engine.read = read  # type: ignore[method-assign]

    async def ask(schema: dict[str, Any]) -> tuple[Any, list[str]]:
        streamed: list[str] = []
        reads.clear()
        response = await model.complete(ChatRequest(messages, json_schema=schema,
                                                    max_tokens=32), streamed.append)
        return response, streamed

    response, streamed = asyncio.run(ask(selection_schema(listed)))
    answers = {json.dumps({"skill": name}) for name in (*listed, None)}
    assert response.text in answers
    assert parse_selection(response.text, listed).outcome in ("selected", "none")
    assert streamed == [response.text]
    spelled = len(engine.llama.tokenize(response.text.encode(), add_bos=False))
    assert response.usage.completion_tokens == spelled
    # One batch reads ahead to the first digits' decision (` "` or ` null`, then `haiku`
    # or `skill`, taking `skill_000` on the way), one more for the last digit.
    assert 1 <= len(reads) <= 2, reads
    again, _ = asyncio.run(ask(selection_schema(listed)))
    assert again.text == response.text

    pair = {"type": "object", "properties": {"skill": {"enum": list(listed[:2])},
                                             "sure": {"type": "boolean"}},
            "required": ["skill", "sure"], "additionalProperties": False}
    response, _ = asyncio.run(ask(pair))
    data = json.loads(response.text)
    assert set(data) == {"skill", "sure"} and data["skill"] in listed[:2]


def test_an_answer_is_llama_cpp_pythons_own_completion_the_same_every_time() -> None:
    """In-process, the real model: Lily samples with llama.cpp's own chain, reordered
    (the likeliest tokens taken before the repeat penalty), and the answer is exactly
    what llama-cpp-python's completion gives for the same tokens, settings and seed;
    streamed in pieces that make it up, counted right, and the same when asked again
    after other requests (a seed per request, not a sequence per session)."""
    from lily_kernel.llm.base import ChatRequest
    from lily_kernel.llm.local_files import local_model_file
    from lily_kernel.llm.local_model import LocalModel

    file = local_model_file("local")
    assert file is not None
    model = LocalModel(file, prefix_cache=None, temperature=0.7, threads=1)
    model.load()
    assert model.engine is not None and model.engine.dry  # on by default
    model.engine.dry = False  # llama-cpp-python's own chain has no DRY sampler
    messages = [{"role": "system", "content": "You are Lily."},
                {"role": "user", "content": "Tell me a story about a cat at sea."}]

    async def ask(max_tokens: int) -> tuple[Any, list[str]]:
        streamed: list[str] = []
        response = await model.complete(ChatRequest(messages, max_tokens=max_tokens),
                                        streamed.append)
        return response, streamed

    response, streamed = asyncio.run(ask(80))

    def library() -> dict[str, Any]:  # on the model's thread: llama.cpp's is bound to it
        assert model.engine is not None
        llama = model.engine.llama
        llama.n_tokens = 0
        done: dict[str, Any] = llama.create_completion(
            prompt=model.engine.tokens(messages), max_tokens=80, temperature=0.7,
            repeat_penalty=1.1, seed=0)
        return done

    expected = model.worker.submit(library).result()
    assert response.text == expected["choices"][0]["text"]
    assert response.usage.completion_tokens == expected["usage"]["completion_tokens"]
    assert response.finish_reason == expected["choices"][0]["finish_reason"]
    assert len(streamed) > 10 and "".join(streamed) == response.text
    asyncio.run(ask(5))
    again, _ = asyncio.run(ask(80))
    assert again.text == response.text
