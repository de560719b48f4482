"""The shell in the conversation loop (scripted model, real runtime, real bubblewrap):
asked by default, `a` for the rest of the session, full auto from the environment or
`/policy` (said under every answer, an event), never skipping an untrusted folder's
question, a skill's `Bash(...)` narrowing, and replay of a turn that ran a command."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from lily_kernel.display.messages import FULL_AUTO_NOTE
from lily_kernel.llm import ChatResponse, ScriptedModel
from lily_kernel.replay import replay_session
from lily_kernel.runtime import LilyRuntime
from tests.conftest import write_skill
from tests.core.test_scripts import sandbox_or_skip
from tests.llm.test_skill_tools import call, events, reply, tool_result
from tests.support.sink import RecordingSink


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    sandbox_or_skip()


def start(workspace: Path, environ: dict[str, str], **settings: str) -> LilyRuntime:
    env = {**environ, "LILY_MODEL": "scripted/test", "LILY_EVENT_LOG": "1", **settings}
    return LilyRuntime.start(workspace, env, session_id="shell")


def turn(runtime: LilyRuntime, text: str, sink: RecordingSink,
         *replies: ChatResponse | BaseException) -> ScriptedModel:
    model = ScriptedModel(*replies)
    runtime.model = model
    asyncio.run(runtime.run_cell(text, sink))
    return model


def shell(command: str, call_id: str = "s") -> ChatResponse:
    return reply("", call("shell", call_id, command=command))


def outcomes(runtime: LilyRuntime) -> list[Any]:
    return [a["outcome"] for a in events(runtime, "approval")]


def test_asked_by_default_and_always_for_the_rest_of_the_session(workspace, environ) -> None:
    runtime = start(workspace, environ)
    sink = RecordingSink("a")
    model = turn(runtime, "count", sink, shell("echo a b | wc -w"), reply("2 words."))
    assert "shell" in [t["function"]["name"] for t in model.requests[0].tools]
    [question] = sink.questions
    assert question.endswith('  "echo a b | wc -w"\n  (a: yes, and run "shell" without asking '
                             "for the rest of this session)\nRun it? [y/N/a] ")
    assert tool_result(model, 1) == "[exit code 0]\n2\n"
    assert 'Shell "echo a b | wc -w": exit code 0 (sandboxed)' in sink.notices
    again = RecordingSink()  # no one would answer: it must not be asked
    model = turn(runtime, "and now?", again, shell("echo more > more.txt"), reply("done"))
    assert again.questions == [] and (workspace / "more.txt").read_text() == "more\n"
    assert outcomes(runtime) == ["always"]
    assert [r["status"] for r in events(runtime, "code_run")] == ["ok", "ok"]
    assert sink.footers[-1] is not None and FULL_AUTO_NOTE not in sink.footers[-1]
    helped = runtime.run_command(parse("/help"))
    assert "yes (you said always, this session)" in render(helped)


def test_no_and_no_one_to_answer_run_nothing(workspace, environ) -> None:
    runtime = start(workspace, environ)
    model = turn(runtime, "make a file", RecordingSink("n"), shell("touch made"), reply("not made"))
    assert tool_result(model, 1) == 'Refused: the person declined running the command "touch made".'
    model = turn(runtime, "again", RecordingSink(), shell("touch made"), reply("not made"))
    assert "needs the person's approval (asked by default)" in tool_result(model, 1)
    assert not (workspace / "made").exists() and events(runtime, "code_run") == []
    assert outcomes(runtime) == ["declined", "unanswerable"]


def test_full_auto_from_the_environment_runs_unasked_and_says_so(workspace, environ) -> None:
    runtime = start(workspace, environ, LILY_POLICY="auto")
    sink = RecordingSink()
    model = turn(runtime, "count", sink, shell("echo 42"), reply("42"))
    assert sink.questions == [] and tool_result(model, 1) == "[exit code 0]\n42\n"
    assert sink.footers[-1] is not None and sink.footers[-1].endswith(FULL_AUTO_NOTE)
    assert events(runtime, "policy_profile") == [{"profile": "auto", "by": "configuration"}]
    assert "Policy: FULL AUTO" in render(runtime.run_command(parse("/help")))


def test_the_footer_says_full_auto_even_when_footers_are_off(workspace, environ) -> None:
    runtime = start(workspace, environ, LILY_POLICY="auto", LILY_FOOTER="0")
    sink = RecordingSink()
    turn(runtime, "hi", sink, reply("hello"))
    assert sink.footers == [FULL_AUTO_NOTE]


def test_policy_command_turns_full_auto_on_and_off(workspace, environ) -> None:
    runtime = start(workspace, environ)
    asyncio.run(runtime.run_cell("/policy auto", RecordingSink()))
    sink = RecordingSink()
    turn(runtime, "run it", sink, shell("echo on"), reply("ok"))
    assert sink.questions == [] and sink.footers[-1] is not None
    assert FULL_AUTO_NOTE in sink.footers[-1]
    asyncio.run(runtime.run_cell("/policy ask", RecordingSink()))
    asked = RecordingSink("y")
    turn(runtime, "run it", asked, shell("echo off"), reply("ok"))
    assert len(asked.questions) == 1 and asked.footers[-1] is not None
    assert FULL_AUTO_NOTE not in asked.footers[-1]
    assert events(runtime, "policy_profile") == [{"profile": "auto", "by": "command"},
                                                 {"profile": "ask", "by": "command"}]
    with pytest.raises(Exception, match=r"/policy takes 'ask' or 'auto' \(got 'yes'\)"):
        asyncio.run(runtime.run_cell("/policy yes", RecordingSink()))


@pytest.fixture
def untrusted(environ: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.delenv("LILY_TRUST", raising=False)
    return {k: v for k, v in environ.items() if k != "LILY_TRUST"}


def test_auto_never_skips_an_untrusted_folders_question(workspace, untrusted) -> None:
    """The person's own variables allow the shell and turn on auto; the folder is not
    trusted: each call is asked all the same, and `a` is no answer there."""
    runtime = start(workspace, untrusted, LILY_POLICY="auto", LILY_TOOLS_ALLOW="shell")
    sink = RecordingSink("a")
    model = turn(runtime, "go", sink, shell("touch x"), reply("ok"))
    [question] = sink.questions
    assert question.endswith("Run it? [y/N] ")
    assert tool_result(model, 1).startswith("Refused: the person declined")
    assert not (workspace / "x").exists() and outcomes(runtime) == ["declined"]


def test_a_skill_narrows_the_shell_to_its_commands(workspace, environ) -> None:
    write_skill(Path(environ["LILY_HOME"]) / "skills", "echoer",
                "---\nsummary: Echo things\nallowed-tools: Bash(echo:*) Read\n---\nEcho.\n")
    runtime = start(workspace, environ, LILY_TOOLS_ALLOW="read,list,shell")
    sink = RecordingSink()
    model = turn(runtime, "echo", sink, reply("", call("load_skill", "l", name="echoer")),
                 shell("touch pwned", "s1"), shell("echo fine", "s2"), reply("ok"))
    offered = [t["function"]["name"] for t in model.requests[1].tools]
    assert "shell" in offered and "list" not in offered
    assert tool_result(model, 2).startswith(
        "Refused: the active skill 'echoer' allows only the commands `echo:*`")
    assert tool_result(model, 3) == "[exit code 0]\nfine\n"
    assert not (workspace / "pwned").exists() and sink.questions == []


def test_a_turn_that_ran_commands_replays_identically(workspace, environ) -> None:
    (workspace / "notes.txt").write_text("three\nlines\nhere\n")
    runtime = start(workspace, environ)
    turn(runtime, "count", RecordingSink("a"), shell("wc -l notes.txt; pwd"), reply("3"))
    turn(runtime, "again", RecordingSink(), shell("echo made > made.txt; cat made.txt"), reply("ok"))
    asyncio.run(runtime.run_cell("/policy auto", RecordingSink()))
    turn(runtime, "once more", RecordingSink(), shell("ls"), reply("ok"))
    runtime.close()
    assert runtime.log.path is not None
    (workspace / "made.txt").unlink()  # the replay makes it again, in its copy
    report = replay_session(runtime.log.path, environ=dict(runtime.env.host.environ))
    assert report.identical, report.describe()
    assert not (workspace / "made.txt").exists()  # never in the person's folder
    # The command's output differs now: the first divergence is its run.
    (workspace / "notes.txt").write_text("one line\n")
    report = replay_session(runtime.log.path, environ=dict(runtime.env.host.environ))
    assert report.divergence is not None and report.divergence.event == "code_run"
    assert "differs in output_sha256" in report.describe()


def parse(text: str) -> Any:
    from lily_kernel.commands import parse_command

    return parse_command(text)


def render(result: Any) -> str:
    from lily_kernel.display import render_plain

    return render_plain(result)


def test_full_auto_from_a_lily_yaml_takes_effect_once_trusted(workspace, untrusted) -> None:
    (workspace / "lily.yaml").write_text("policy: auto\n")
    runtime = start(workspace, untrusted)
    sink = RecordingSink("y")  # the trust question: yes
    turn(runtime, "hello", sink, reply("hi"))
    assert "policy: auto (would let the model run code without asking" in sink.questions[0]
    assert events(runtime, "policy_profile") == [{"profile": "auto", "by": "configuration"}]
    assert sink.footers[-1] is not None and sink.footers[-1].endswith(FULL_AUTO_NOTE)
