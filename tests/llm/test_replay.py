"""Session replay: the recorded model answers, approvals and script results fed back,
everything else re-run against the current files; identical or the first divergence."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lily_kernel.cli.main import main
from lily_kernel.errors import ModelError, ModelFault
from lily_kernel.llm import ScriptedModel
from lily_kernel.replay import ReplayError, replay_session
from lily_kernel.runtime.collaborators import Collaborators
from tests.conftest import write_skill
from tests.llm.test_skill_tools import LOAD, SCRIPT_CALL, call, reply, run, start
from tests.support.sink import RecordingSink
from tests.support.waiting import until


def record(workspace: Path, environ: dict[str, str]) -> tuple[Path, dict[str, str]]:
    """A session with a command, a reference read, an approved and a declined script, a
    provider fault and a plain answer; returns its log and the environment it ran with
    (replay runs with the machine's environment: the tests give it the same)."""
    runtime = start(workspace, environ, LILY_TOOLS_ASK="run_skill_script")
    run(runtime, "/skills", RecordingSink())
    run(runtime, "fill the form for Ada", RecordingSink("y"), LOAD,
        reply("", call("read_skill_file", "r", path="references/forms.md")),
        reply("Filling.", SCRIPT_CALL), reply("Done: filled.txt"))
    run(runtime, "again", RecordingSink("n"), LOAD, reply("", SCRIPT_CALL), reply("Not run."))
    with pytest.raises(ModelError):
        run(runtime, "and now?", RecordingSink(), ModelError(ModelFault.RATE_LIMIT, "rate limit."))
    run(runtime, "/help formfill", RecordingSink())
    run(runtime, "thanks", RecordingSink(), reply("You're welcome."))
    runtime.close()
    assert runtime.log.path is not None
    return runtime.log.path, dict(runtime.env.host.environ)


def test_a_recorded_session_replays_as_identical(workspace, environ) -> None:
    log, env = record(workspace, environ)
    (workspace / "filled.txt").unlink()  # replay never runs the script again
    report = replay_session(log, environ=env)
    assert report.identical, report.describe()
    assert report.cells == 6 and report.events == len(log.read_text().splitlines())
    assert report.describe().startswith("identical: 6 cell(s)")
    assert not (workspace / "filled.txt").exists()
    kinds = {json.loads(line)["event"] for line in log.read_text().splitlines()}
    assert {"cell", "cell_finished", "command", "model_call", "tool_call", "approval",
            "skill_file_read", "skill_script_run", "skill_loaded"} <= kinds


def test_a_changed_reference_is_the_first_divergence(workspace, environ) -> None:
    log, env = record(workspace, environ)
    user_skill = Path(environ["LILY_HOME"]) / "skills" / "formfill"
    (user_skill / "references" / "forms.md").write_text("# Forms\n\nThree fields now.\n")
    report = replay_session(log, environ=env)
    assert not report.identical
    assert report.divergence is not None and report.divergence.event == "skill_file_read"
    text = report.describe()
    assert "(skill_file_read) differs in sha256, size:" in text
    assert "expected" in text and "actual" in text


def test_a_changed_script_diverges_at_its_run(workspace, environ) -> None:
    log, env = record(workspace, environ)
    script = Path(environ["LILY_HOME"]) / "skills" / "formfill" / "scripts" / "fill_form.py"
    script.write_text(script.read_text() + "\n# changed\n")
    report = replay_session(log, environ=env)
    assert report.divergence is not None and report.divergence.expected is not None
    assert (report.divergence.event, report.divergence.expected["data"]["script"]) == (
        "skill_script_run", "scripts/fill_form.py")
    assert "differs in sha256" in report.describe()


def test_a_new_skill_changes_the_snapshot_digest(workspace, environ) -> None:
    log, env = record(workspace, environ)
    write_skill(workspace / "skills", "newcomer", "---\nsummary: New.\n---\nNew.\n")
    report = replay_session(log, environ=env)
    assert report.divergence is not None
    assert report.divergence.index == 3 and report.divergence.event == "skill_catalog_updated"
    assert "differs in count, digest" in report.describe()


def test_the_cli_exit_status_says_identical_or_not(workspace, environ, capsys,
                                                   monkeypatch) -> None:
    log, env = record(workspace, environ)
    for name in [k for k in os.environ if k.startswith("LILY_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():  # the shell the session was recorded in
        monkeypatch.setenv(name, value)
    assert main(["replay", str(log)]) == 0
    assert capsys.readouterr().out.startswith("identical: 6 cell(s)")
    (workspace / "skills").mkdir(exist_ok=True)
    write_skill(workspace / "skills", "newcomer", "---\nsummary: New.\n---\nNew.\n")
    assert main(["replay", str(log)]) == 1
    assert capsys.readouterr().out.startswith("divergence at event 3 (skill_catalog_updated)")


def test_bad_logs_are_clear_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    with pytest.raises(ReplayError, match="line 1: not a JSON event"):
        replay_session(bad)
    done = subprocess.run([sys.executable, "-m", "lily_kernel.cli.main", "replay", str(bad)],
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("lily: ") and "not a JSON event" in done.stderr
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"event": "command", "data": {}}) + "\n")
    with pytest.raises(ReplayError, match="not a Lily session log"):
        replay_session(other)


def test_a_model_without_tools_replays_its_selections(workspace, environ) -> None:
    """The embedded model cannot call tools: the request's shortlist selects its skill,
    or, among near-equal matches, a structured step (step "select") does. Replay derives
    the shortlist again, feeds that step, and knows the model had no tools."""
    for name, summary in (("tables-clean", "Clean messy CSV tables"),
                          ("tables-tidy", "Tidy messy CSV tables")):
        (workspace / "skills" / name).mkdir(parents=True)
        (workspace / "skills" / name / "SKILL.md").write_text(
            f"---\nsummary: {summary}\n---\nBody of {name}.\n")
    runtime = start(workspace, environ)
    model = ScriptedModel(reply("Name and date, please."), reply('{"skill": "tables-tidy"}'),
                          reply("Tidied."), name="local/smol.gguf", supports_tools=False,
                          context_window=8192)
    runtime.model = model
    asyncio.run(runtime.run_cell("I need a form filled, name and date", RecordingSink()))
    asyncio.run(runtime.run_cell("clean and tidy messy csv tables", RecordingSink()))
    runtime.close()
    assert runtime.log.path is not None
    log = runtime.log.path
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    steps = [e["data"]["step"] for e in lines if e["event"] == "model_call"]
    assert steps == [1, "select", 1]
    chosen = [(e["data"]["name"], e["data"]["decided_by"]) for e in lines
              if e["event"] == "skill_selection"]
    assert chosen == [("formfill", "ranker"), ("tables-tidy", "model")]
    assert model.requests[0].tools == []  # no tools were offered to it
    report = replay_session(log, environ=runtime.env.host.environ)
    assert report.identical, report.describe()


class _Waiting(RecordingSink):
    """A person who never answers: the cell is interrupted at the question."""

    async def ask(self, prompt: str) -> str | None:
        self.questions.append(prompt)
        await asyncio.sleep(3600)
        return None


def test_a_question_interrupted_replays_as_interrupted(workspace, environ) -> None:
    """The stop button at the approval question is logged; replay stops that cell there
    instead of answering it with the next cell's answer (which would run the script)."""
    runtime = start(workspace, environ, LILY_TOOLS_ASK="run_skill_script")
    runtime.model = ScriptedModel(LOAD, reply("", SCRIPT_CALL))
    waiting = _Waiting()

    async def interrupted() -> None:
        task = asyncio.ensure_future(runtime.run_cell("fill it", waiting))
        await until(lambda: waiting.questions, "the question was asked")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(interrupted())
    run(runtime, "fill it now", RecordingSink("y"), LOAD, reply("", SCRIPT_CALL), reply("Done."))
    runtime.close()
    assert runtime.log.path is not None
    outcomes = [json.loads(line)["data"]["outcome"]
                for line in runtime.log.path.read_text().splitlines()
                if json.loads(line)["event"] == "approval"]
    assert outcomes == ["interrupted", "approved"]
    report = replay_session(runtime.log.path, environ=runtime.env.host.environ)
    assert report.identical, report.describe()


def test_a_model_that_failed_to_load_replays_as_failed(workspace, environ) -> None:
    """The first chat cell's model could not be loaded (a missing GGUF, say); the next
    loaded it. The failure is logged, and replay fails that cell the same way instead of
    answering it with the next cell's recorded answer."""
    model = ScriptedModel(reply("Hello."))
    tries: list[int] = []

    def loader(*_: object) -> ScriptedModel:
        tries.append(1)
        if len(tries) == 1:
            raise ModelError(ModelFault.LOCAL_MODEL, "the local model could not be loaded.")
        return model

    runtime = start(workspace, environ, collaborators=Collaborators(make_model=loader))
    with pytest.raises(ModelError):
        asyncio.run(runtime.run_cell("hello", RecordingSink()))
    asyncio.run(runtime.run_cell("hello again", RecordingSink()))
    runtime.close()
    assert runtime.log.path is not None
    events = [json.loads(line) for line in runtime.log.path.read_text().splitlines()]
    loads = [e["data"] for e in events if e["event"] == "model_load"]
    assert [load["error"]["kind"] for load in loads] == ["local_model"]
    finished = [e["data"]["status"] for e in events if e["event"] == "cell_finished"]
    report = replay_session(runtime.log.path, environ=runtime.env.host.environ)
    assert report.identical, report.describe()
    assert finished[0] != finished[1] and report.cells == 2


def test_a_cell_stopped_while_the_model_loads_replays_as_stopped(workspace, environ) -> None:
    """The stop button while the model is still loading ends that cell (the load goes
    on, and the next cell gets the model); replay stops that cell too, instead of giving
    it the next cell's answer."""
    import threading

    model = ScriptedModel(reply("Hello."))
    loading, release = threading.Event(), threading.Event()

    def slow_loader(*_: object) -> ScriptedModel:
        loading.set()
        release.wait(30)
        return model

    runtime = start(workspace, environ, collaborators=Collaborators(make_model=slow_loader))

    async def stopped_then_answered() -> None:
        task = asyncio.ensure_future(runtime.run_cell("hello", RecordingSink()))
        await until(loading.is_set, "the model was loading")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()
        await runtime.run_cell("hello again", RecordingSink())

    asyncio.run(stopped_then_answered())
    runtime.close()
    assert runtime.log.path is not None
    events = [json.loads(line) for line in runtime.log.path.read_text().splitlines()]
    assert [e["data"]["outcome"] for e in events if e["event"] == "model_load"] \
        == ["interrupted"]
    assert [e["data"]["status"] for e in events if e["event"] == "cell_finished"] \
        == ["interrupted", "ok"]
    report = replay_session(runtime.log.path, environ=runtime.env.host.environ)
    assert report.identical, report.describe()
