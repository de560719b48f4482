"""The litellm path over real HTTP against the loopback OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lily_kernel.errors import ModelError
from lily_kernel.prompting import SKILL_FILES_NOTE
from lily_kernel.runtime import LilyRuntime
from tests.conftest import skill_text, write_skill
from tests.support.openai_server import OpenAIServer, Reply, tool_call
from tests.support.sink import RecordingSink
from tests.support.waiting import until

# Not `sk-`-shaped, so only redaction by the environment's values can hide it (the
# kernel test uses an `sk-` key, which the key-shape rule covers).
SECRET = "AIzaTEST-do-not-leak-0987654321"


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as srv:
        yield srv


@pytest.fixture
def make_runtime(workspace: Path, environ: dict[str, str], server: OpenAIServer,
                 monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    write_skill(workspace / "skills", "echo", skill_text("Echo in uppercase", command="echo"))
    (workspace / "notes.txt").write_text("the note")

    def make(**extra: str) -> LilyRuntime:
        env = {**environ, "LILY_MODEL": "openai/test-model", "LILY_API_BASE": server.base_url,
               "LILY_RETRY_BACKOFF": "0.01", "LILY_TOOLS_DENY": "write", "LILY_EVENT_LOG": "1",
               **extra}
        return LilyRuntime.start(workspace, env, session_id="http")

    return make


def run(runtime: LilyRuntime, code: str) -> RecordingSink:
    sink = RecordingSink()
    asyncio.run(runtime.run_cell(code, sink))
    return sink


def test_plain_streamed_reply(make_runtime, server: OpenAIServer) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime()
    server.script(Reply(text="Hello from the loopback model.", pieces=5))
    sink = run(runtime, "hi")
    assert sink.replies == ["Hello from the loopback model."]
    assert len(sink.streamed) >= 1 and "Hello from the loopback model.".startswith(sink.streamed[0])
    sent = server.requests[0]
    assert sent["model"] == "test-model" and sent["stream"] is True
    assert sent["messages"][-1] == {"role": "user", "content": "hi"}
    assert [t["function"]["name"] for t in sent["tools"]] == ["load_skill", "list", "python",
                                                                    "read", "shell"]
    assert server.headers[0]["authorization"] == f"Bearer {SECRET}"


def test_non_streamed_reply(make_runtime, server: OpenAIServer) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime(LILY_STREAM="0")
    server.script(Reply(text="One piece."))
    sink = run(runtime, "hi")
    assert (sink.replies, sink.streamed) == (["One piece."], [])
    assert server.requests[0].get("stream") in (None, False)  # litellm omits stream=False


def test_load_skill_then_answer_and_second_refused(make_runtime, server: OpenAIServer) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime()
    server.script(
        Reply(tool_calls=[tool_call("load_skill", {"name": "echo"}, "a")]),
        Reply(tool_calls=[tool_call("load_skill", {"name": "echo"}, "b")]),
        Reply(text="HELLO"),
    )
    sink = run(runtime, "say hello loudly")
    assert sink.replies == ["HELLO"]
    second, third = server.requests[1]["messages"], server.requests[2]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "load_skill"
    assert second[-1] == {"role": "tool", "tool_call_id": "a",
                          "content": "SKILL.md of 'echo':\n\nBody of Echo in uppercase\n\n"
                                     f"({SKILL_FILES_NOTE})\n"}
    assert third[-1]["content"].startswith("Refused: the skill 'echo' is already loaded")


def test_denied_and_unknown_tools_are_never_executed(make_runtime, server: OpenAIServer,
                                                     workspace: Path) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime()
    server.script(
        Reply(tool_calls=[tool_call("write", {"path": "pwned.txt", "content": "x"}, "w"),
                          tool_call("teleport", {"cmd": "rm -rf /"}, "s"),
                          tool_call("read", {"path": "notes.txt"}, "r")]),
        Reply(text="ok"),
    )
    run(runtime, "do things")
    results = {m["tool_call_id"]: m["content"] for m in server.requests[1]["messages"]
               if m["role"] == "tool"}
    assert results == {"w": "Refused: tool 'write' is not allowed by the tool policy.",
                       "s": "Refused: unknown tool 'teleport'.", "r": "the note"}
    assert not (workspace / "pwned.txt").exists()


def test_forced_skill_body_reaches_the_server(make_runtime, server: OpenAIServer) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime()
    server.script(Reply(text="LOUD"))
    run(runtime, "/skill echo be loud")
    system = server.requests[0]["messages"][0]
    assert system["role"] == "system"
    assert system["content"].endswith("# Skill: echo\n\nBody of Echo in uppercase\n")
    assert "load_skill" not in [t["function"]["name"] for t in server.requests[0]["tools"]]


def test_history_goes_to_the_next_request(make_runtime, server: OpenAIServer) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime()
    server.script(Reply(text="first answer"), Reply(text="second answer"))
    run(runtime, "first question")
    run(runtime, "second question")
    assert [(m["role"], m["content"]) for m in server.requests[1]["messages"][1:]] == [
        ("user", "first question"), ("assistant", "first answer"), ("user", "second question")]


@pytest.mark.parametrize(("reply", "kind", "words", "requests"), [
    (Reply(status=401, error_message=f"Incorrect API key provided: {SECRET}"), "auth",
     "authentication failed", 1),
    (Reply(status=404, error_message="The model does not exist"), "not_found",
     "model not found", 1),
    (Reply(status=400, error_message="This model's maximum context length is 8192 tokens",
           error_code="context_length_exceeded"), "context_window", "context window", 1),
    (Reply(malformed=True, text="abcdefgh"), "bad_response", "bad response", 1),
    (Reply(truncate=True, text="abcdefghijkl", pieces=6), "bad_response", "bad response", 1),
    (Reply(empty=True), "bad_response", "bad response", 1),
])
def test_non_transient_faults_are_named_and_not_retried(
    make_runtime, server: OpenAIServer, reply: Reply, kind: str, words: str, requests: int,
    workspace: Path,
) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime(LILY_STREAM="0") if reply.empty else make_runtime()
    server.script(reply)
    with pytest.raises(ModelError) as err:
        run(runtime, "hi")
    assert err.value.kind == kind and words in str(err.value)
    assert SECRET not in str(err.value)
    assert len(server.requests) == requests
    assert runtime.session.conversation_state.messages == []
    log = (workspace / ".lily" / "sessions" / "http.jsonl").read_text()
    assert SECRET not in log and f'"outcome": "{kind}"' in log


HTML = "<html><body><h1>Welcome to nginx!</h1></body></html>"


@pytest.mark.parametrize(("stream", "reply", "kind", "words"), [
    # The HTTP status decides first: 401 and 403 are authentication, whatever the body.
    (True, Reply(status=403, error_message="Forbidden"), "auth", "authentication failed"),
    (False, Reply(status=403, error_message="Forbidden"), "auth", "authentication failed"),
    (True, Reply(status=401, error_message="Invalid API key",
                 error_type="invalid_request_error"), "auth", "authentication failed"),
    # What went wrong is said, not "the stream ended before the answer was finished".
    (True, Reply(body="{not json"), "bad_response", "an application/json body (HTTP 200)"),
    (True, Reply(body=HTML, content_type="text/html"), "bad_response",
     "an HTML page (HTTP 200)"),
    (False, Reply(body=HTML, content_type="text/html"), "bad_response",
     "Received: '<html>"),
    (True, Reply(empty=True), "bad_response", "ended without any answer (no choices"),
    (False, Reply(empty=True), "bad_response", "the response has no choices"),
    (True, Reply(truncate=True, text="abcdefghijkl", pieces=6), "bad_response",
     "the stream ended before the answer was finished"),
])
def test_faults_say_what_happened(make_runtime, server: OpenAIServer, stream: bool,
                                  reply: Reply, kind: str, words: str) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime(LILY_STREAM="1" if stream else "0")
    server.script(reply, Reply(text="a retry would get this"))
    with pytest.raises(ModelError) as err:
        run(runtime, "hi")
    assert err.value.kind == kind, str(err.value)
    assert words in str(err.value)
    assert "ended before the answer was finished" not in str(err.value) or reply.truncate
    assert len(server.requests) == 1  # none of these is retried


@pytest.mark.parametrize(("status", "kind"), [(429, "rate_limit"), (500, "server"),
                                              (503, "server")])
def test_transient_faults_are_retried_then_succeed(make_runtime, server: OpenAIServer,
                                                   status: int, kind: str) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime()
    server.script(Reply(status=status), Reply(text="recovered"))
    assert run(runtime, "hi").replies == ["recovered"]
    assert len(server.requests) == 2


def test_transient_faults_give_up_after_the_bound(make_runtime, server: OpenAIServer) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime(LILY_RETRIES="2")
    server.script(Reply(status=429), Reply(status=429), Reply(status=429), Reply(text="late"))
    with pytest.raises(ModelError) as err:
        run(runtime, "hi")
    assert err.value.kind == "rate_limit" and "after 3 attempts" in str(err.value)
    assert len(server.requests) == 3


def test_missing_key_is_an_authentication_error(make_runtime, server: OpenAIServer,
                                                monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime()
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ModelError) as err:
        run(runtime, "hi")
    assert err.value.kind == "auth" and "OPENAI_API_KEY" in str(err.value)
    assert "attempts" not in str(err.value)  # not retried
    assert server.requests == []  # refused before any request left the machine


def test_timeout(make_runtime, server: OpenAIServer) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime(LILY_REQUEST_TIMEOUT="0.5", LILY_RETRIES="0")
    server.script(Reply(text="too late", delay=2))
    with pytest.raises(ModelError) as err:
        run(runtime, "hi")
    assert err.value.kind == "timeout" and "did not answer in time" in str(err.value)


def test_connection_refused(make_runtime) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as probe:  # a loopback port with nobody listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    runtime = make_runtime(LILY_API_BASE=f"http://127.0.0.1:{port}/v1", LILY_RETRIES="1")
    with pytest.raises(ModelError) as err:
        run(runtime, "hi")
    assert err.value.kind == "connection" and "could not be reached" in str(err.value)
    assert "after 2 attempts" in str(err.value)


def test_slow_stream_is_cancelled_and_the_session_goes_on(make_runtime, server: OpenAIServer) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime()
    server.script(Reply(text="word " * 40, pieces=40, chunk_delay=0.25), Reply(text="next"))
    sink = RecordingSink()

    async def interrupt() -> float:
        task = asyncio.ensure_future(runtime.run_cell("tell me a long story", sink))
        await until(lambda: sink.streamed, "the answer was streaming")
        started = time.perf_counter()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.perf_counter() - started

    # The in-flight request is abandoned at once, not after the 9 s of stream left (5 s:
    # a bound a loaded machine keeps; a quiet one takes milliseconds).
    assert asyncio.run(interrupt()) < 5.0
    assert sink.replies == [] and sink.streamed[0].startswith("word")
    # What the person saw stays, marked as stopped (a follow-up means that answer).
    [asked, seen] = runtime.session.conversation_state.messages
    assert asked == {"role": "user", "content": "tell me a long story"}
    assert seen["content"].startswith("word") and seen["content"].endswith(
        "[The person stopped this answer here.]")
    assert run(runtime, "still there?").replies == ["next"]


def test_a_bug_in_lily_is_not_reported_as_a_provider_fault(
    make_runtime, server: OpenAIServer, monkeypatch: pytest.MonkeyPatch,
) -> None:  # type: ignore[no-untyped-def]
    """Only exceptions of the provider stack become ModelError; Lily's own keep their
    type and traceback (bug: 'bad response ... run the cell again', traceback dropped)."""
    from lily_kernel.llm import litellm_model

    def broken(response: object, finish_reason: object) -> None:
        raise TypeError("a bug in Lily's response conversion")

    monkeypatch.setattr(litellm_model, "_to_response", broken)
    runtime = make_runtime(LILY_STREAM="0")
    server.script(Reply(text="fine"))
    with pytest.raises(TypeError, match="a bug in Lily"):
        run(runtime, "hi")
    assert len(server.requests) == 1  # and not retried as if transient


def test_a_provider_fault_keeps_its_cause(make_runtime, server: OpenAIServer) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime()
    server.script(Reply(status=404, error_message="The model does not exist"))
    with pytest.raises(ModelError) as err:
        run(runtime, "hi")
    assert err.value.kind == "not_found"
    assert type(err.value.__cause__).__module__.startswith("litellm")


def test_every_litellm_exception_name_lily_relies_on_exists() -> None:
    """The fault table looks litellm's classes up by name: a pinned name that
    disappears must fail here, not silently stop classifying."""
    from lily_kernel.llm.litellm_model import LITELLM_FAULTS, import_litellm

    litellm = import_litellm()
    missing = [name for name, _ in LITELLM_FAULTS if not isinstance(
        getattr(litellm.exceptions, name, None), type)]
    assert missing == []


def test_the_warm_up_imports_exist_in_the_pinned_litellm() -> None:
    """The background warm-up names modules of litellm and its stack; a rename would
    make the first chat cell slow again without any error."""
    import sys

    from lily_kernel.llm.litellm_model import warm_up_imports

    warm_up_imports()
    assert "litellm.litellm_core_utils.default_encoding" in sys.modules
