"""The embedded model through a real Lily kernel: nothing configured, no key, no network.

These run the real SmolLM2-135M GGUF with llama.cpp (setup.sh installs the `local`
extra); they skip only where the extra is not installed.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lily_kernel.display.messages import EMBEDDED_NOTICE, PYTHON_CELL_HINT
from lily_kernel.llm.local_files import find_embedded_model
from tests.kernel.conftest import REPO, Execution, LilyProcess, lily_kernel

EMBEDDED = find_embedded_model()
# How long one cell of the real model may take before the test fails: a bound for a
# failure (a passing cell returns when it ends), kept at load 8 and beyond on 2 cores.
ANSWER_SECONDS = 300
pytestmark = [pytest.mark.skipif(
    EMBEDDED is None, reason="the `local` extra is not installed (./setup.sh installs it)"),
    pytest.mark.slow]  # the real model, in a kernel or in this process: minutes under load
# The network guard, then the checkout under test (a worktree's own code too).
GUARD = os.pathsep.join((str(REPO / "tests" / "support" / "guard_network"), str(REPO)))
NAME = "SmolLM2-135M-Instruct (local)"


@pytest.fixture(scope="module")
def network_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("net") / "attempts.log"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, network_log: Path) -> Iterator[LilyProcess]:
    root = tmp_path_factory.mktemp("local")
    workspace = root / "workspace"
    workspace.mkdir()
    # Answers of at most 256 tokens (the embedded model's default is 1,024): each cell
    # then stays well inside ANSWER_SECONDS on a loaded 2-core machine (~10 tokens a
    # second at load 8), and every test here still sees a whole answer or stops one.
    # `python` denied: these tests are of the model's words; a block of Python in its
    # answer would be asked about (y/N) and wait for an answer no test gives. Its code
    # running: test_the_offline_model_gets_391_from_code_it_saw_run.
    with lily_kernel(workspace, root / "home", LILY_EVENT_LOG="1", PYTHONPATH=GUARD,
                     LILY_TEST_NETWORK_LOG=str(network_log), LILY_MAX_TOKENS="256",
                     LILY_TOOLS_DENY="python") as kernel:
        yield kernel
    # Whatever the tests did, the kernel never tried to reach the network.
    assert not network_log.exists(), network_log.read_text()


def notices(run: Execution) -> list[str]:
    return [d["text/plain"] for d in run.displays if "lily-notice" in d.get("text/html", "")]


def answer(run: Execution) -> dict[str, str]:
    """The reply's final content: the last update of its display (or the display)."""
    updates = run.of_type("update_display_data")
    if updates:
        data: dict[str, str] = updates[-1]["data"]
        return data
    return [d for d in run.displays if "lily-reply" in d.get("text/html", "")][-1]


def session_events(kernel: LilyProcess) -> list[dict[str, Any]]:
    (log,) = (kernel.workspace / ".lily" / "sessions").glob("*.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_a_chat_cell_is_answered_streamed_in_place_and_told_once(
    kernel: LilyProcess, network_log: Path,
) -> None:
    first = kernel.execute("Hello! Who are you?", timeout=ANSWER_SECONDS)
    assert first.status == "ok", first.reply
    assert notices(first).count(EMBEDDED_NOTICE) == 1
    created = [d for d in first.of_type("display_data") if "display_id" in d["transient"]]
    updates = first.of_type("update_display_data")
    assert len(created) == 1 and updates, [m["msg_type"] for m in first.outputs]
    assert {u["transient"]["display_id"] for u in updates} == {created[0]["transient"]["display_id"]}
    final = answer(first)
    text, _, footer = final["text/plain"].rpartition("\n\n-- ")
    assert text.strip(), final
    assert footer.startswith(NAME + " · ") and "8,192-token context" in footer
    assert footer.endswith("no cost")
    assert "<sub>" in final["text/html"]
    second = kernel.execute("Thank you.", timeout=ANSWER_SECONDS)
    assert second.status == "ok", second.reply
    assert EMBEDDED_NOTICE not in notices(second)  # told once per session
    # Neither greeting nor thanks calls for a skill: none selected, no declaration step.
    selections = [e["data"] for e in session_events(kernel) if e["event"] == "skill_selection"]
    assert [(s["outcome"], s["decided_by"]) for s in selections[:2]] == [
        ("none", "ranker"), ("none", "ranker")]
    assert not any(n.startswith("Skill: ") for n in notices(first) + notices(second))
    assert not network_log.exists(), network_log.read_text()


def test_help_shows_the_active_model(kernel: LilyProcess) -> None:
    plain = kernel.execute("/help").plain
    assert "Model: local, the embedded SmolLM2-135M-Instruct" in plain
    assert "cannot call tools" in plain


def test_a_forced_skill_is_answered(kernel: LilyProcess) -> None:
    run = kernel.execute("/skill echo good morning", timeout=ANSWER_SECONDS)
    assert run.status == "ok", run.reply
    assert answer(run)["text/plain"].strip()


def test_the_selection_step_runs_and_is_logged(kernel: LilyProcess) -> None:
    run = kernel.execute("Please echo this back to me: hello", timeout=ANSWER_SECONDS)
    assert run.status == "ok", run.reply
    events = session_events(kernel)
    selections = [e["data"] for e in events if e["event"] == "skill_selection"]
    calls = [e["data"] for e in events if e["event"] == "model_call"]
    assert {c["model"] for c in calls} == {NAME}
    # One selection per chat turn so far: the shortlist's, or the model's declaration
    # step among near-equal matches, read and logged with its reply.
    steps = [c["step"] for c in calls]
    assert len(selections) >= 1 and all(s["decided_by"] in ("ranker", "model")
                                        for s in selections)
    declared = [s for s in selections if s["decided_by"] == "model"]
    assert steps.count("select") == len(declared)
    assert all(s["reply"].startswith("{") for s in declared), selections
    assert all(c["completion_tokens"] >= 1 for c in calls if c["outcome"] == "ok")
    assert all(c["cost"] == 0.0 and c["context_window"] == 8192 for c in calls
               if c["outcome"] == "ok")
    # "echo" names the bundled echo skill: the clear best match, with no model step.
    last = selections[-1]
    assert (last["outcome"], last["name"], last["decided_by"]) == ("selected", "echo", "ranker")
    assert last["shortlist"][0]["name"] == "echo"
    assert any(n.startswith("Skill: echo (best match for this request, score ")
               for n in notices(run))


def _interrupt_when(kernel: LilyProcess, code: str, started: str,
                    text: str = "") -> tuple[dict[str, Any], float]:
    """Run `code`, interrupt once the cell shows an iopub message of type `started`
    whose text/plain starts with `text` (an event of the cell itself, whatever the
    machine's load: no sleep); the execute_reply and the seconds from interrupt to reply."""
    msg_id = kernel.kc.execute(code)
    deadline = time.monotonic() + ANSWER_SECONDS
    while True:
        assert time.monotonic() < deadline, f"no {started} message {text!r} in {ANSWER_SECONDS} s"
        msg = kernel.kc.get_iopub_msg(timeout=ANSWER_SECONDS)
        if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == started
                and str(msg["content"].get("data", {}).get("text/plain", "")).startswith(text)):
            break
    asked = time.monotonic()
    kernel.km.interrupt_kernel()
    reply = kernel.reply_to(msg_id, timeout=60)
    kernel.drain_iopub()
    return reply["content"], time.monotonic() - asked


def test_stop_during_generation_ends_the_cell_and_the_next_one_works(kernel: LilyProcess) -> None:
    content, _ = _interrupt_when(
        kernel, "Write a very long story about a cat who sails around the world, "
        "with many chapters.", "update_display_data")
    assert content["status"] == "error" and content["ename"] == "KeyboardInterrupt", content
    after = kernel.execute("Say hi.", timeout=ANSWER_SECONDS)
    assert after.status == "ok", after.reply
    assert answer(after)["text/plain"].strip()


def test_stop_during_prompt_evaluation(kernel: LilyProcess) -> None:
    long_message = "Summarise these notes. " + " ".join(
        f"Note {i}: the meeting moved to room {i} at {i % 12 + 1} o'clock." for i in range(150))
    # As soon as the kernel runs the cell (its execute_input): the model is then reading
    # the long message for seconds, whatever the machine's load.
    content, _ = _interrupt_when(kernel, long_message, "execute_input")
    assert content["status"] == "error" and content["ename"] == "KeyboardInterrupt", content
    after = kernel.execute("Say hi.", timeout=ANSWER_SECONDS)  # the model is free again, and answers
    assert after.status == "ok", after.reply
    assert answer(after)["text/plain"].strip()


@pytest.mark.parametrize(("make", "expected"), [
    (lambda p: p.write_bytes(b"not a model at all" * 100), "is not a GGUF model file"),
    (lambda p: p.write_bytes(EMBEDDED.read_bytes()[: 2 << 20]) if EMBEDDED else None,
     "could not be loaded"),
    (lambda p: None, "does not exist"),
], ids=["garbage", "truncated", "missing"])
def test_a_broken_gguf_file_is_a_clear_error(tmp_path: Path, make, expected: str) -> None:  # type: ignore[no-untyped-def]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    model = tmp_path / "model.gguf"
    make(model)
    with lily_kernel(workspace, tmp_path / "home", LILY_MODEL=f"local/{model}") as kernel:
        run = kernel.execute("hello", timeout=ANSWER_SECONDS)
        assert run.status == "error" and run.reply["ename"] == "ModelError", run.reply
        assert run.reply["evalue"].startswith("Error: the local model could not be loaded")
        assert expected in run.reply["evalue"]
        assert run.reply["traceback"] == [run.reply["evalue"]]
        assert kernel.execute("/skills").status == "ok"  # the kernel is alive


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

    first = LocalModel(file, prefix_cache=tmp_path)
    first.load()
    reply = asyncio.run(ask(first, turn1))
    whole = first.last_evaluated
    assert whole > SAVED_PREFIX_MIN  # the whole prompt was read
    assert len(list(tmp_path.glob("*.kv"))) == 1  # and the system context saved
    turn2 = [*turn1, {"role": "assistant", "content": reply},
             {"role": "user", "content": "Thanks."}]
    asyncio.run(ask(first, turn2))
    assert 0 < first.last_evaluated < 40  # only the new turn (and a re-tokenized edge)

    second = LocalModel(file, prefix_cache=tmp_path)
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
        model = LocalModel(file, prefix_cache=None)
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
    model = LocalModel(file, prefix_cache=None)
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
    model = LocalModel(file, prefix_cache=None, temperature=0.7)
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


def test_a_skill_that_runs_code_is_said_to_be_beyond_this_model(kernel: LilyProcess) -> None:
    """#29: the embedded model cannot call tools; a chosen skill that runs Python says
    so in one line, and a cell of plain Python is pointed at /python (still answered)."""
    folder = kernel.workspace / "skills" / "sine-plot"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nsummary: Plot a sine wave\n---\nRun:\n\n```python\n"
                                     "import math\nprint(math.sin(1))\n```\n")
    assert kernel.execute("/reload_skills").status == "ok"
    run = kernel.execute("/skill sine-plot plot a sine wave", timeout=ANSWER_SECONDS)
    assert run.status == "ok", run.reply
    said = [n for n in notices(run) if "cannot call tools" in n]
    assert len(said) == 1 and said[0].startswith(
        f"Skill sine-plot runs code (python), and this model ({NAME}) cannot call tools")
    code = kernel.execute("import math\nprint(math.sqrt(2))", timeout=ANSWER_SECONDS)
    assert code.status == "ok", code.reply
    assert PYTHON_CELL_HINT in notices(code)
    assert answer(code)["text/plain"].strip()  # the model answered it all the same


def test_the_offline_model_gets_391_from_code_it_saw_run(tmp_path: Path) -> None:
    """Issue 37's "Done when": asked "what is 17 * 23?", the embedded model (which cannot
    call tools) writes a python block; under full auto it runs in the sandboxed kernel,
    the person sees the code and 391, and the answer, from that output, says 391 (the
    model alone said 340)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    network_log = tmp_path / "attempts.log"
    with lily_kernel(workspace, tmp_path / "home", LILY_EVENT_LOG="1", PYTHONPATH=GUARD,
                     LILY_TEST_NETWORK_LOG=str(network_log), LILY_MAX_TOKENS="256",
                     LILY_POLICY="auto") as kernel:
        run = kernel.execute("what is 17 * 23?", timeout=ANSWER_SECONDS)
        ran = [e["data"] for e in session_events(kernel) if e["event"] == "code_run"]
    assert run.status == "ok", run.reply
    code = [d["text/markdown"] for d in run.displays
            if d.get("text/markdown", "").startswith("```python")]
    assert len(code) == 1 and "17" in code[0] and "23" in code[0]  # shown where it ran
    shown_code = next(i for i, d in enumerate(run.displays)
                      if d.get("text/markdown", "").startswith("```python"))
    replies = [i for i, d in enumerate(run.displays) if "lily-reply" in d.get("text/html", "")]
    assert replies and replies[-1] > shown_code  # the answer under the code it came from
    assert "391" in "".join(c["text"] for c in run.of_type("stream") if c["name"] == "stdout")
    assert [(r["caller"], r["status"]) for r in ran] == [("model", "ok")]
    assert "391" in answer(run)["text/plain"]
    assert not network_log.exists(), network_log.read_text()
