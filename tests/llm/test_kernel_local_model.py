"""The embedded model through a real Lily kernel, one kernel for the module: nothing
configured, no key, no network.

These run the real SmolLM2-135M GGUF with llama.cpp (setup.sh installs the `local`
extra); they skip only where the extra is not installed. Its model on one thread
(tests/support/embedded.py says why). The tests that need a kernel of their own:
test_kernel_local_model_alone.py; the model in this process: test_local_model.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lily_kernel.display.messages import EMBEDDED_NOTICE, PYTHON_CELL_HINT
from tests.kernel.conftest import LilyProcess, lily_kernel
from tests.support.embedded import (
    ANSWER_SECONDS,
    GUARD,
    NAME,
    NEEDS_THE_MODEL,
    ONE_THREAD,
    answer,
    notices,
    session_events,
)

pytestmark = [NEEDS_THE_MODEL, pytest.mark.slow]  # the real model in a kernel: minutes under load


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
                     LILY_TOOLS_DENY="python", **ONE_THREAD) as kernel:
        yield kernel
    # Whatever the tests did, the kernel never tried to reach the network.
    assert not network_log.exists(), network_log.read_text()


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
        f"Note {i}: the meeting moved to room {i} at {i % 12 + 1} o'clock." for i in range(90))
    before = len([e for e in session_events(kernel) if e["event"] == "model_call"])
    # When the person is told the model reads first ("Reading the conversation first"
    # or "Reading the SKILL.md of ... first": the message's 1,807 tokens are over the
    # notice's 1,500; read in batches of 128), the stop lands while the model reads,
    # whatever the machine's load. (On execute_input, as before, it could land before
    # the model was called: the person's message never reached it.)
    content, _ = _interrupt_when(kernel, long_message, "display_data", "Reading the ")
    assert content["status"] == "error" and content["ename"] == "KeyboardInterrupt", content
    calls = [e["data"] for e in session_events(kernel) if e["event"] == "model_call"][before:]
    assert calls and calls[-1]["outcome"] == "cancelled", calls  # stopped in the model's call
    # The model is free again, and answers. (A new conversation first: the stopped
    # message stays in this one, and the next turn would read its ~1,900 tokens again,
    # minutes under load; what is left of a stopped turn: tests/llm/test_conversation.py.)
    assert kernel.execute("/new").status == "ok"
    after = kernel.execute("Say hi.", timeout=ANSWER_SECONDS)
    assert after.status == "ok", after.reply
    assert answer(after)["text/plain"].strip()


def test_a_skill_that_runs_code_is_said_to_be_beyond_this_model(kernel: LilyProcess) -> None:
    """#29: the embedded model cannot call tools; a chosen skill that runs Python says
    so in one line, and a cell of plain Python is pointed at /python (still answered)."""
    # A new conversation: this test is of what is said about the skill, not of the turns
    # before, which the skill's system context would have the model read again (the
    # stopped long message among them: minutes under load, twice).
    assert kernel.execute("/new").status == "ok"
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
