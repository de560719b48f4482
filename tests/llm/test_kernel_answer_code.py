"""Code from a model that cannot call tools, as a person meets it: a real Lily kernel over
ZeroMQ, the loopback OpenAI-style model declared without tool calls (`tool_calls: false`),
its scripted answer holding a fenced python block, run in the real sandboxed subkernel
through the `python` tool's gate: asked (yes, no), full auto, and Run All from the
record with no model call (issue 37, item 4)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from lily_kernel.display.messages import CODE_NOT_RUN_NOTICE
from lily_kernel.prompting.code_blocks import CODE_RULES
from tests.core.test_scripts import sandbox_or_skip
from tests.kernel.conftest import LilyProcess, lily_kernel
from tests.kernel.test_record import REPLAYED, env_for, run_all, save, shown, workspace_for
from tests.llm.test_kernel_skills import execute_answering, log_events
from tests.support.openai_server import OpenAIServer, Reply

ANSWER = "Let me compute it.\n\n```python\nprint(17 * 23)\n```"
CODE = "print(17 * 23)"
pytestmark = pytest.mark.slow  # kernels, and the sandboxed Python kernel in each


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    sandbox_or_skip()


@pytest.fixture(scope="module")
def kernel(server: OpenAIServer, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[LilyProcess]:
    root = tmp_path_factory.mktemp("answer-code")
    workspace = root / "workspace"
    workspace.mkdir()
    with lily_kernel(workspace, root / "home", LILY_MODEL="openai/no-tools",
                     LILY_API_BASE=server.base_url, OPENAI_API_KEY="sk-answer-code-0000",
                     LILY_TOOL_CALLS="0", LILY_STREAM="0", LILY_EVENT_LOG="1",
                     LILY_RETRY_BACKOFF="0.01") as kernel:
        yield kernel


def script(server: OpenAIServer, *replies: str) -> None:
    server.replies.clear()
    server.requests.clear()
    server.script(*(Reply(text=r) for r in replies))


def printed(run: Any) -> str:
    return "".join(c["text"] for c in run.of_type("stream") if c["name"] == "stdout")


def final(run: Any) -> str:
    """The answer as the person reads it last (the reply's display, updated in place)."""
    updates = run.of_type("update_display_data")
    data = updates[-1]["data"] if updates else \
        [d for d in run.displays if "lily-reply" in d.get("text/html", "")][-1]
    return str(data["text/plain"])


def test_the_answers_block_is_asked_run_shown_and_read_back(kernel: LilyProcess,
                                                            server: OpenAIServer) -> None:
    script(server, ANSWER, "17 * 23 = 391.")
    run, prompts = execute_answering(kernel, "what is 17 * 23?", ["y"])
    assert run.status == "ok", run.reply
    assert "  | print(17 * 23)\n" in prompts[0] and prompts[0].endswith("Run it? [y/N/a] ")
    assert {"text/markdown": f"```python\n{CODE}\n```"}.items() <= next(
        d for d in run.displays if "text/markdown" in d and "python" in d["text/markdown"]
    ).items()  # the code, shown where it runs
    assert printed(run) == "391\n"
    # The answer without its block, then the code where it ran, then the next answer,
    # in the order they happened (the final answer under the code, not above it).
    texts = [d["text/plain"] for d in run.displays]
    said = texts.index("Let me compute it.")
    code = next(i for i, d in enumerate(run.displays) if CODE in d.get("text/markdown", ""))
    answer = next(i for i, t in enumerate(texts) if t.startswith("17 * 23 = 391."))
    assert said < code < answer == len(texts) - 1
    assert final(run).startswith("17 * 23 = 391.\n")
    first, second = server.requests
    assert "tools" not in first  # declared without tool calls: none offered
    assert first["messages"][0]["role"] == "system" and CODE_RULES in first["messages"][0][
        "content"]
    assert first["messages"][-1] == {"role": "user", "content": "what is 17 * 23?"}
    assert second["messages"][-2] == {"role": "assistant", "content": ANSWER}
    said = second["messages"][-1]["content"]
    assert said.startswith("Output of your code:\n```text\n[ran]\n391\n```")
    ran = log_events(kernel, "code_run")[-1]
    assert (ran["tool"], ran["caller"], ran["status"], ran["code"]) == (
        "python", "model", "ok", CODE)
    assert log_events(kernel, "tool_call")[-1]["name"] == "python"


def test_declined_the_code_does_not_run_and_the_model_is_told(kernel: LilyProcess,
                                                              server: OpenAIServer) -> None:
    runs = len(log_events(kernel, "code_run"))
    script(server, "```python\nopen('declined.txt', 'w').write('x')\n```",
           "I could not run it.")
    run, _ = execute_answering(kernel, "make a file", ["n"])
    assert run.status == "ok", run.reply
    assert not (kernel.workspace / "declined.txt").exists()
    assert len(log_events(kernel, "code_run")) == runs
    told = server.requests[1]["messages"][-1]["content"]
    assert told.startswith("Your code did not run: Refused: the person declined running "
                           "Python code in the sandbox")
    assert any("declined" in d["text/plain"] for d in run.displays
               if "lily-notice" in d.get("text/html", ""))
    assert final(run).startswith("I could not run it.")


def test_only_the_first_answers_code_runs(kernel: LilyProcess, server: OpenAIServer) -> None:
    runs = len(log_events(kernel, "code_run"))
    script(server, "```python\nprint('one')\n```", "Again:\n```python\nprint('two')\n```")
    run, _ = execute_answering(kernel, "print one", ["y"])
    assert run.status == "ok", run.reply
    assert printed(run) == "one\n"
    assert len(server.requests) == 2  # one more answer, and no third
    assert len(log_events(kernel, "code_run")) == runs + 1
    assert any(d["text/plain"] == CODE_NOT_RUN_NOTICE for d in run.displays)


def test_full_auto_runs_unasked_and_run_all_replays_it_with_no_model_call(
        server: OpenAIServer, tmp_path: Path) -> None:
    workspace = workspace_for(tmp_path)
    path = workspace / "sums.ipynb"
    save(path, (("c-1", "what is 17 * 23?"),))
    env = env_for(tmp_path, server, JPY_SESSION_NAME=str(path), LILY_TOOL_CALLS="0",
                  LILY_POLICY="auto")
    script(server, ANSWER, "17 * 23 = 391.")
    first = run_all(path, env)  # nbclient: no one could answer a question
    assert len(server.requests) == 2
    before = shown(first.cells[1])
    outputs = first.cells[1].outputs
    assert any(o.get("text") == "391\n" for o in outputs)  # ran without asking
    assert before[0] == "Let me compute it." and before[-1].startswith("17 * 23 = 391.")
    nbformat.write(first, path)

    again = run_all(path, env)  # restart, Run All
    assert len(server.requests) == 2  # no model call
    after = shown(again.cells[1])
    assert after[0].startswith(REPLAYED)
    assert after[1:] == before
    assert [o.get("text") for o in again.cells[1].outputs if o.output_type == "stream"] == [
        "391\n"]  # the code ran again, from the record's answer
    logs = sorted((workspace / ".lily" / "sessions").glob("*.jsonl"),
                  key=lambda p: p.stat().st_mtime)
    events = [json.loads(line) for line in logs[-1].read_text().splitlines()]
    runs = [e["data"] for e in events if e["event"] == "code_run"]
    assert [(r["code"], r["status"]) for r in runs] == [(CODE, "ok")]
