"""Chat cells through a real Lily kernel (jupyter_client) against the loopback server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lily_kernel.runtime.turn import STOPPED_MARK
from tests.conftest import skill_text, write_skill
from tests.kernel.conftest import WITHOUT_LOCAL_MODEL, LilyProcess, lily_kernel
from tests.support.openai_server import OpenAIServer, Reply, tool_call

SECRET = "sk-kernel-test-SECRET-0987654321"


@pytest.fixture(scope="module")
def chat_kernel(server: OpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LilyProcess]:
    root = tmp_path_factory.mktemp("chat")
    workspace = root / "workspace"
    write_skill(workspace / "skills", "echo", skill_text("Echo in uppercase", command="shout"))
    with lily_kernel(workspace, root / "home", LILY_MODEL="openai/kernel-test",
                     LILY_API_BASE=server.base_url, OPENAI_API_KEY=SECRET,
                     LILY_RETRY_BACKOFF="0.01", LILY_EVENT_LOG="1") as kernel:
        yield kernel


def all_text(execution: object) -> str:
    return repr(execution.reply) + repr(execution.outputs)  # type: ignore[attr-defined]


def test_no_model_configured_is_a_clear_error_and_commands_still_work(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with lily_kernel(workspace, tmp_path / "home", **WITHOUT_LOCAL_MODEL) as kernel:
        chat = kernel.execute("What can you do?")
        assert chat.status == "error"
        assert chat.reply["ename"] == "ModelNotConfiguredError"
        first, second, *_rest = chat.reply["evalue"].split("\n")
        assert first == "Error: no model configured."
        assert second.startswith("The embedded local model is not installed.")
        assert "pip install 'lily-kernel[local]'" in chat.reply["evalue"]
        assert "set LILY_MODEL" in chat.reply["evalue"]
        assert chat.reply["traceback"] == [chat.reply["evalue"]]
        assert kernel.execute("/skills").status == "ok"


def test_streamed_reply_is_one_display_updated_in_place(chat_kernel: LilyProcess,
                                                        server: OpenAIServer) -> None:
    server.script(Reply(text="Streaming works in the notebook.", pieces=8, chunk_delay=0.08))
    run = chat_kernel.execute("Say something")
    assert run.status == "ok", run.reply
    first = run.of_type("display_data")
    updates = run.of_type("update_display_data")
    assert len(first) == 1 and updates, [m["msg_type"] for m in run.outputs]
    display_id = first[0]["transient"]["display_id"]
    assert all(u["transient"]["display_id"] == display_id for u in updates)
    # The answer, then the usage footer (the model's name is hidden here: it is part of
    # the test's key, and no 8 characters of a key reach the notebook).
    assert updates[-1]["data"]["text/html"] == (
        '<div class="lily-reply mathjax_ignore"><p>Streaming works in the notebook.</p>\n'
        "<p><sub>openai/[redacted] · 11 tokens in, 7 out</sub></p></div>")
    assert updates[-1]["data"]["text/plain"].endswith("\n\n-- openai/[redacted] · 11 tokens in, 7 out")
    assert len(first[0]["data"]["text/plain"]) < len("Streaming works in the notebook.")
    assert server.requests[-1]["messages"][-1] == {"role": "user", "content": "Say something"}


def test_model_selected_skill_is_shown(chat_kernel: LilyProcess, server: OpenAIServer) -> None:
    server.script(Reply(tool_calls=[tool_call("load_skill", {"name": "echo"})]),
                  Reply(text="HELLO"))
    run = chat_kernel.execute("shout hello")
    assert run.status == "ok"
    assert "Skill: echo (selected by the model)" in run.plain
    answer = run.of_type("update_display_data")[-1]["data"]["text/plain"]
    assert answer.split("\n\n-- ")[0] == "HELLO"
    assert "Body of Echo in uppercase" in server.requests[-1]["messages"][-1]["content"]


def test_provider_fault_is_named_and_the_key_never_shows(chat_kernel: LilyProcess,
                                                         server: OpenAIServer) -> None:
    server.script(Reply(status=401, error_message=f"Incorrect API key provided: {SECRET}"))
    run = chat_kernel.execute("hello?")
    assert run.status == "error" and run.reply["ename"] == "ModelError"
    assert "authentication failed" in run.reply["evalue"]
    assert SECRET not in all_text(run)
    log = next((chat_kernel.workspace / ".lily" / "sessions").glob("*.jsonl")).read_text()
    assert SECRET not in log
    assert chat_kernel.execute("/help").status == "ok"


def leaked_runs(text: str, secret: str, size: int = 8) -> list[str]:
    """Every run of `size` consecutive characters of `secret` found in `text`."""
    return [secret[i:i + size] for i in range(len(secret) - size + 1)
            if secret[i:i + size] in text]


@pytest.mark.parametrize("reply", [
    Reply(status=401, error_message="Incorrect API key provided:", echo_key_from=3),
    Reply(status=400, error_message="key ends with", echo_key_from=len(SECRET) - 10),
    Reply(text="Your key is", echo_key_from=3),
], ids=["401-without-prefix", "400-tail", "reply-text"])
def test_partial_key_echoes_never_reach_the_notebook_or_the_log(
        chat_kernel: LilyProcess, server: OpenAIServer, reply: Reply) -> None:
    server.script(reply)
    run = chat_kernel.execute("hello?")
    assert "[redacted]" in all_text(run)
    assert leaked_runs(all_text(run), SECRET) == []
    log = next((chat_kernel.workspace / ".lily" / "sessions").glob("*.jsonl")).read_text()
    assert leaked_runs(log, SECRET) == []


def test_interrupting_a_slow_stream(chat_kernel: LilyProcess, server: OpenAIServer) -> None:
    server.script(Reply(text="slow " * 60, pieces=60, chunk_delay=0.2), Reply(text="Back."))
    msg_id = chat_kernel.kc.execute("Tell me a very long story")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the answer is streaming: it shows in the cell
        msg = chat_kernel.kc.get_iopub_msg(timeout=30)
        if "slow slow" in str(msg["content"].get("data", {}).get("text/plain", "")):
            break
    began = time.monotonic()
    chat_kernel.km.interrupt_kernel()
    reply = chat_kernel.reply_to(msg_id, timeout=30)  # past a kernel_info left from the start
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    # At once, not after the ~11 s of stream left (8 s: a bound a loaded machine keeps).
    assert time.monotonic() - began < 8
    assert chat_kernel.km.is_alive()
    chat_kernel.drain_iopub()
    after = chat_kernel.execute("Are you still there?")
    assert after.status == "ok"
    # The stopped answer stays in the history as far as it was shown, marked as stopped.
    sent = server.requests[-1]["messages"]
    # (the kernel's earlier cells left answers with tool calls and no text)
    stopped = [m.get("content") or "" for m in sent if m["role"] == "assistant"][-1]
    assert [m["content"] for m in sent if m["role"] == "user"][-2:] == [
        "Tell me a very long story", "Are you still there?"]
    assert stopped.startswith("slow slow") and stopped.endswith(STOPPED_MARK)


def test_golden_style_stream_off(tmp_path: Path, server: OpenAIServer) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with lily_kernel(workspace, tmp_path / "home", LILY_MODEL="openai/kernel-test",
                     LILY_API_BASE=server.base_url, OPENAI_API_KEY=SECRET,
                     LILY_STREAM="0") as kernel:
        server.script(Reply(text="One final display."))
        run = kernel.execute("hi")
        assert run.status == "ok"
        assert run.of_type("update_display_data") == []
        assert [d["text/plain"].split("\n\n-- ")[0] for d in run.displays] == [
            "One final display."]
