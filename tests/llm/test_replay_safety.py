"""Replay of a log that may be crafted: it runs in a scratch copy of the workspace (the
person's folder is never written), stops at the first divergence, takes policy and
settings from this machine and the current files (the recorded ones are compared), and
refuses bad input in one line (exit 2), bounded, never waiting on a FIFO or a device."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lily_kernel.cli.main import main
from lily_kernel.llm import ChatResponse, ScriptedModel
from lily_kernel.record.answers import NotebookRecord
from lily_kernel.replay import ReplayError, replay_session
from lily_kernel.replay import log as replay_log
from lily_kernel.replay import scratch as replay_workspace
from lily_kernel.replay.scratch import scratch_copy
from lily_kernel.runtime import LilyRuntime
from lily_kernel.runtime.collaborators import Collaborators
from lily_kernel.tools import files as files_module
from tests.conftest import write_skill
from tests.llm.test_skill_tools import call, reply
from tests.support.sink import RecordingSink


def session(workspace: Path, environ: dict[str, str],
            *cells: tuple[str, list[ChatResponse]], **settings: str
            ) -> tuple[Path, dict[str, str]]:
    """Record cells (each with its model's answers); the log and the session's env."""
    env = {**environ, "LILY_MODEL": "scripted/test", "LILY_EVENT_LOG": "1", **settings}
    runtime = LilyRuntime.start(workspace, env, session_id="s1")
    for code, answers in cells:
        runtime.model = ScriptedModel(*answers)
        asyncio.run(runtime.run_cell(code, RecordingSink()))
    runtime.close()
    assert runtime.log.path is not None
    return runtime.log.path, dict(runtime.env.host.environ)


def files(folder: Path) -> dict[str, bytes]:
    """Every file of the folder and its content, the session logs aside."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and ".lily" not in p.parts}


def write(path: str, content: str) -> list[ChatResponse]:
    return [reply("", call("write", path=path, content=content)), reply("Saved.")]


# --- a scratch copy -------------------------------------------------------------------


def test_a_replayed_write_lands_in_a_copy_never_in_the_workspace(workspace, environ) -> None:
    (workspace / "notes.txt").write_text("mine\n")
    write_skill(workspace / "skills", "notes", "---\nsummary: Keep notes.\n---\nBody.\n")
    log, env = session(
        workspace, environ,
        ("/help notes", []),  # shows the skill's path: the workspace's, not the copy's
        ("save it", write("notes.txt", "replayed\n")),
        ("read it", [reply("", call("read", path="notes.txt")), reply("It says replayed.")]))
    (workspace / "notes.txt").write_text("mine\n")  # as the person had it before
    before = files(workspace)
    report = replay_session(log, environ=env)
    assert report.identical, report.describe()  # the read saw the copy's write
    assert files(workspace) == before


def test_the_copy_leaves_out_history_and_environments(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    (workspace / "data").mkdir(parents=True)
    (workspace / "data" / "table.csv").write_text("a,b\n")
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    (workspace / "env" / "bin").mkdir(parents=True)
    (workspace / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    (workspace / ".lily" / "sessions").mkdir(parents=True)
    (workspace / ".lily" / "sessions" / "old.jsonl").write_text("{}\n")
    (workspace / "inside").symlink_to("data")
    (workspace / "outside").symlink_to(tmp_path)
    os.mkfifo(workspace / "pipe")  # made anew, never opened
    with scratch_copy(workspace) as copy:
        assert copy.name == "project" and copy != workspace
        assert (copy / "data" / "table.csv").read_text() == "a,b\n"
        assert sorted(p.name for p in copy.iterdir()) == [
            ".lily", "data", "inside", "outside", "pipe"]
        assert (copy / "inside").resolve() == (copy / "data").resolve()
        assert (copy / "outside").resolve() == tmp_path.resolve()
        assert not (copy / ".lily" / "sessions").exists()
    assert not copy.exists()


def test_a_workspace_over_the_bounds_is_refused(workspace, environ, monkeypatch,
                                                capsys) -> None:
    log, env = session(workspace, environ, ("/skills", []))
    for number in range(5):
        (workspace / f"file{number}.txt").write_text("x" * 100)
    (workspace / ".git").mkdir()  # left out: not counted
    for number in range(50):
        (workspace / ".git" / f"object{number}").write_text("x")
    # 5 files, .lily/ and the .gitignore Lily writes there (its sessions/ left out).
    monkeypatch.setattr(replay_workspace, "MAX_ENTRIES", 7)
    assert replay_session(log, environ=env).identical
    monkeypatch.setattr(replay_workspace, "MAX_ENTRIES", 4)
    with pytest.raises(ReplayError, match=r"holds more than 4 files and folders \(\.git, "):
        replay_session(log, environ=env)
    monkeypatch.setattr(replay_workspace, "MAX_ENTRIES", 100)
    monkeypatch.setattr(replay_workspace, "MAX_BYTES", 300)
    with pytest.raises(ReplayError, match=r"more than 300 bytes of files .* too much to copy"):
        replay_session(log, environ=env)


def test_a_full_disk_is_said_not_left_out(workspace, monkeypatch) -> None:
    (workspace / "notes.txt").write_text("mine\n")

    def full(*_: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(replay_workspace, "_copy_file", full)
    with pytest.raises(ReplayError, match=r"no room for a scratch copy of the workspace in .* "
                                          r"\(No space left on device\); set TMPDIR"), \
            scratch_copy(workspace):
        pass


# --- the first divergence -------------------------------------------------------------


def test_no_cell_runs_after_the_first_divergence(workspace, environ) -> None:
    (workspace / "notes.txt").write_text("mine\n")
    log, env = session(
        workspace, environ,
        ("read it", [reply("", call("read", path="notes.txt")), reply("It says mine.")]),
        ("save it", write("saved.txt", "saved\n")))
    (workspace / "notes.txt").write_text("changed since\n")
    (workspace / "saved.txt").unlink()
    ran: list[int] = []
    report = replay_session(log, before_cell=lambda index, *_: ran.append(index), environ=env)
    assert report.divergence is not None and report.divergence.event == "tool_call"
    assert "differs in result" in report.describe()
    assert ran == [0]  # the second cell (the write) never ran
    assert not (workspace / "saved.txt").exists()


def test_the_cell_that_diverges_stops_at_that_event(workspace, environ, monkeypatch) -> None:
    """The read's result differs: the write the model asked for next, in the same cell,
    never runs (not even in the copy)."""
    (workspace / "notes.txt").write_text("mine\n")
    log, env = session(workspace, environ, ("read it, then save it", [
        reply("", call("read", path="notes.txt")),
        reply("", call("write", "c2", path="saved.txt", content="saved\n")),
        reply("Saved.")]))
    (workspace / "notes.txt").write_text("changed since\n")
    writes: list[str] = []
    real_write = files_module._write

    def counted(args: Any, ctx: Any) -> str:
        writes.append(args.path)
        return real_write(args, ctx)

    monkeypatch.setattr(files_module, "_write", counted)
    for _ in range(5):  # (the write, were it started, would race the stop)
        report = replay_session(log, environ=env)
        assert report.divergence is not None and report.divergence.event == "tool_call"
        assert report.divergence.expected is not None
        assert report.divergence.expected["data"]["name"] == "read"
    assert writes == []
    (workspace / "notes.txt").write_text("mine\n")
    assert replay_session(log, environ=env).identical and writes == ["saved.txt"]


# --- policy and settings from this machine and the current files ------------------------


def test_recorded_settings_are_compared_never_applied(workspace, environ) -> None:
    """A log recorded (or crafted) with LILY_TOOLS_DENY='' does not lift the folder's
    `deny: [write]`: the settings differ at session_started, and nothing runs."""
    (workspace / "lily.yaml").write_text("tools:\n  deny: [write]\n")
    log, env = session(workspace, environ, ("save it", write("saved.txt", "saved\n")),
                       LILY_TOOLS_DENY="")
    assert (workspace / "saved.txt").exists()  # the recorded setting let it write
    (workspace / "saved.txt").unlink()
    del env["LILY_TOOLS_DENY"]  # this machine has no such variable
    ran: list[int] = []
    report = replay_session(log, before_cell=lambda index, *_: ran.append(index), environ=env)
    assert report.divergence is not None
    assert (report.divergence.index, report.divergence.event) == (1, "session_started")
    assert "differs in settings" in report.describe()
    assert '"LILY_TOOLS_DENY": ""' in report.describe()
    assert ran == [] and not (workspace / "saved.txt").exists()


def test_trust_is_the_recorded_one(workspace, environ, monkeypatch, capsys) -> None:
    """Trusted through the store when recorded: trusted in the replay too (the recorded
    trust, in memory), whatever this machine's store says now, which replay never
    writes. LILY_TRUST is a setting like the others: compared."""
    write_skill(workspace / "skills", "notes", "---\nsummary: Keep notes.\n---\nBody.\n")
    monkeypatch.setenv("LILY_HOME", environ["LILY_HOME"])
    assert main(["trust", str(workspace), "--yes"]) == 0
    capsys.readouterr()
    untrusting = {k: v for k, v in environ.items() if k != "LILY_TRUST"}
    log, env = session(workspace, untrusting, ("/skills", []))
    [checked] = [json.loads(line)["data"] for line in log.read_text().splitlines()
                 if json.loads(line)["event"] == "trust_checked"]
    assert checked["by"] == "store" and list(checked["trusted_skills"]) == ["skills/notes"]
    store = Path(environ["LILY_HOME"]) / "trust.json"
    store.unlink()  # this machine trusts nothing now
    report = replay_session(log, environ=env)
    assert report.identical, report.describe()
    assert not store.exists()
    trusting = replay_session(log, environ={**env, "LILY_TRUST": "workspace"})
    assert trusting.divergence is not None and trusting.divergence.index == 1
    assert "differs in settings" in trusting.describe()


def test_a_question_that_named_the_folders_record_replays_as_asked(workspace, environ,
                                                                    monkeypatch) -> None:
    """The folder's record (an earlier session's turns) was named by the recorded trust
    question; the replay's copy holds no record, yet asks the very question (the record's
    line fed back from `trust_checked`, as the rest of the recorded trust)."""
    settings = {**environ, "LILY_MODEL": "scripted/test", "LILY_EVENT_LOG": "1"}
    earlier = LilyRuntime.start(workspace, settings, session_id="s0",
                                collaborators=Collaborators(record=NotebookRecord))
    earlier.model = ScriptedModel(reply("Four."))
    asyncio.run(earlier.run_cell("What is 2+2?", RecordingSink()))
    earlier.close()
    monkeypatch.delenv("LILY_TRUST", raising=False)
    untrusting = {k: v for k, v in settings.items() if k != "LILY_TRUST"}
    runtime = LilyRuntime.start(workspace, untrusting, session_id="s1")
    runtime.model = ScriptedModel(reply("Hi."))
    sink = RecordingSink("n")
    asyncio.run(runtime.run_cell("Hello", sink))
    runtime.close()
    assert "record .lily/sessions/ (1 turn in 1 session log)" in sink.questions[0]
    assert runtime.log.path is not None
    report = replay_session(runtime.log.path, environ=dict(runtime.env.host.environ))
    assert report.identical, report.describe()


# --- bad input: one line, exit 2 --------------------------------------------------------


@pytest.fixture
def honest(workspace, environ, monkeypatch) -> Path:
    """A log, and this process's environment the one it was recorded with."""
    log, env = session(workspace, environ,
                       ("read it", [reply("", call("read", path="missing.txt")), reply("None.")]))
    for name in [k for k in os.environ if k.startswith("LILY_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return log


def crafted(log: Path, kind: str, change: Callable[[dict[str, Any]], None]) -> Path:
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    event = next(e for e in lines if e["event"] == kind)
    change(event["data"])
    out = log.parent / "crafted.jsonl"
    out.write_text("".join(json.dumps(e) + "\n" for e in lines))
    return out


def refused(capsys: pytest.CaptureFixture[str], path: Path | str) -> str:
    assert main(["replay", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lily: ") and err.count("\n") == 1, err
    return err


CRAFTED = [
    ("session_started", lambda d: d.update(settings=["LILY_TOOLS_DENY="]),
     "line 1 (session_started): settings is a list, not a mapping of strings."),
    ("session_started", lambda d: d.update(settings="LILY_TOOLS_DENY="),
     'settings is a string ("LILY_TOOLS_DENY="), not a mapping of strings.'),
    ("session_started", lambda d: d.update(settings={"LILY_MODEL": 5}),
     "settings.LILY_MODEL is a number (5), not a string."),
    ("model_call", lambda d: d.update(context_window="abc"),
     '(model_call): context_window is a string ("abc"), not an integer.'),
    ("model_call", lambda d: d.update(outcome="okay"),
     '(model_call): outcome is a string ("okay"), not one of \'ok\', \'cancelled\', '
     "'error', 'auth', 'rate_limit', 'timeout', 'connection', 'server', 'bad_response', "
     "'context_window', 'not_found', 'bad_request', 'local_model'."),
    ("cell_finished", lambda d: d.update(status="fine"),
     '(cell_finished): status is a string ("fine"), not one of \'ok\', \'error\', '
     "'interrupted'."),
    ("model_call", lambda d: d.update(supports_tools="yes"),
     'supports_tools is a string ("yes"), not true or false.'),
    ("model_call", lambda d: d["response"].update(tool_calls="read"),
     'response.tool_calls is a string ("read"), not a list of mappings.'),
    ("cell", lambda d: d.update(code=5), "(cell): code is a number (5), not a string."),
    ("trust_checked", lambda d: d.update(trusted_skills=[]),
     "trusted_skills is a list, not a mapping of strings."),
    ("session_started", lambda d: d.update(workspace=""), "the session log names no workspace."),
    ("session_started", lambda d: d.update(workspace="relative/folder"),
     "the session's workspace relative/folder is not an absolute path."),
]


@pytest.mark.parametrize(("kind", "change", "message"), CRAFTED)
def test_a_field_of_the_wrong_type_is_one_line(honest: Path, capsys, kind: str,
                                               change: Callable[[dict[str, Any]], None],
                                               message: str) -> None:
    assert main(["replay", str(honest)]) == 0  # as recorded, it replays
    capsys.readouterr()
    assert refused(capsys, crafted(honest, kind, change)).rstrip().endswith(message)


def test_a_crafted_text_is_shown_never_obeyed(honest: Path, capsys) -> None:
    """Escapes, newlines and direction overrides in a log's names and values are shown
    as \\uXXXX: a divergence or an error never moves the terminal's cursor."""
    hostile = "x\n\x1b[2J\x9b31m\u202e"
    lines = honest.read_text().splitlines()
    lines.insert(3, json.dumps({"event": hostile, "data": {hostile: hostile}}))
    honest.write_text("\n".join(lines) + "\n")
    assert main(["replay", str(honest)]) == 1
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and not any(c in out for c in "\x1b\x9b\u202e")
    assert "\\u001b[2J" in out
    crafted(honest, "session_started", lambda d: d.update(workspace=f"/nowhere/{hostile}"))
    message = refused(capsys, honest.parent / "crafted.jsonl")
    assert not any(c in message for c in "\x1b\x9b\u202e")


def test_bad_lines_are_one_line(tmp_path: Path, capsys) -> None:
    log = tmp_path / "bad.jsonl"
    for text, message in (
            (b'{"event": 5, "data": {}}\n', "line 1: not a Lily event."),
            (b"[" * 100_000 + b"\n", "line 1: not a JSON event."),
            (b'{"event": "cell", "data": {"code": "x", "more": ' + b"[" * 500 + b"]" * 500
             + b"}}\n", "line 1: nested over 100 levels deep, deeper than any event Lily "
             "writes."),
            (b'{"event": "cell", "data": {"code": "caf\xe9"}}\n', "line 1: not UTF-8 text."),
            (b"\n\n", "not a Lily session log (it must start with session_started).")):
        log.write_bytes(text)
        assert refused(capsys, log).rstrip().endswith(message)


def test_missing_folders_and_large_files_are_refused(honest: Path, tmp_path: Path, capsys,
                                                     monkeypatch) -> None:
    assert "no session log at" in refused(capsys, tmp_path / "nothing.jsonl")
    assert refused(capsys, tmp_path).rstrip().endswith("is a folder, not a session log.")
    sparse = tmp_path / "sparse.jsonl"  # larger than the bound, never read
    with open(sparse, "wb") as handle:
        handle.truncate(replay_log.MAX_LOG_BYTES + 1)
    assert "is over 256 MiB, larger than a session log can be." in refused(capsys, sparse)
    monkeypatch.setattr(replay_log, "MAX_LINE_BYTES", 100)
    assert "line 1: over 100 bytes, longer than any event" in refused(capsys, honest)


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_a_device_is_refused_without_waiting(tmp_path: Path, kind: str) -> None:
    if kind == "fifo":
        path = tmp_path / "log.jsonl"
        os.mkfifo(path)  # no one ever writes to it: opening it to read would wait forever
    else:
        path = Path("/dev/zero")  # never ends
    done = subprocess.run([sys.executable, "-m", "lily_kernel.cli.main", "replay", str(path)],
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    what = "a FIFO" if kind == "fifo" else "a device"
    assert done.stderr == f"lily: {path} is {what}, not a session log.\n"
