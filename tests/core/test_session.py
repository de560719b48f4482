"""Sessions share nothing; the event log records what happened, one JSON line each."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from lily_kernel.commands import parse_command
from lily_kernel.events import EVENT_KINDS
from lily_kernel.runtime import LilyRuntime
from tests.conftest import skill_text, write_skill
from tests.support.sink import RecordingSink


def test_two_sessions_in_one_process_share_nothing(workspace: Path,
                                                   environ: dict[str, str]) -> None:
    write_skill(workspace / "skills", "one", skill_text("one"))
    first = LilyRuntime.start(workspace, environ)
    second = LilyRuntime.start(workspace, environ)
    assert first.session.session_id != second.session.session_id
    write_skill(workspace / "skills", "two", skill_text("two"))
    first.run_command(parse_command("/reload_skills"))  # type: ignore[arg-type]
    first.session.conversation_state.messages.append({"role": "user", "content": "hi"})
    assert first.session.skill_snapshot.version == 2
    assert second.session.skill_snapshot.version == 1
    assert second.session.skill_snapshot.get("two") is None
    assert second.session.conversation_state.messages == []
    assert first.env.registry is not second.env.registry


def test_event_log_is_json_lines_flushed_per_event(workspace: Path,
                                                   environ: dict[str, str]) -> None:
    environ = {**environ, "LILY_EVENT_LOG": "1"}
    write_skill(workspace / "skills", "alpha", skill_text("alpha"))
    write_skill(workspace / "skills", "bad", "---\nsummary: [x\n---\n")
    runtime = LilyRuntime.start(workspace, environ, session_id="s1")
    path = workspace / ".lily" / "sessions" / "s1.jsonl"
    runtime.run_command(parse_command("/skills"))  # type: ignore[arg-type]
    runtime.run_command(parse_command("/nope"))  # type: ignore[arg-type]
    # Read while the session is still open: every event is already on disk.
    events = [json.loads(line) for line in path.read_text().splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds == ["session_started", "trust_checked", "skill_catalog_updated",
                     "skill_warning", "command", "command"]
    assert all(k in EVENT_KINDS for k in kinds)
    assert [e["seq"] for e in events] == [1, 2, 3, 4, 5, 6]
    assert events[1]["data"]["by"] == "environment"  # LILY_TRUST, as the suite runs
    catalog = events[2]["data"]
    assert (catalog["count"], catalog["version"]) == (1, 1)
    assert catalog["digest"] == runtime.session.skill_snapshot.digest
    assert events[3]["data"]["kind"] == "malformed"
    assert events[5]["data"] == {"name": "nope", "argument": "", "ok": False,
                                 "error": "unknown command /nope.", "output_sha256": None,
                                 "output_chars": None}


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=False)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_session_logs_are_kept_out_of_git(workspace: Path, environ: dict[str, str]) -> None:
    """`git add .` in a repository holding the workspace takes no session log: Lily writes
    `.lily/.gitignore` (`*`) when it opens the log."""
    assert _git(workspace, "init", "-q").returncode == 0
    (workspace / "nb.ipynb").write_text("{}")
    runtime = LilyRuntime.start(workspace, {**environ, "LILY_EVENT_LOG": "1"}, session_id="s3")
    runtime.run_command(parse_command("/skills"))  # type: ignore[arg-type]
    log = workspace / ".lily" / "sessions" / "s3.jsonl"
    assert log.is_file()
    assert _git(workspace, "check-ignore", "-q", str(log)).returncode == 0
    added = _git(workspace, "add", "--dry-run", ".").stdout
    assert added == "add 'nb.ipynb'\n"  # nothing of .lily/, its .gitignore included
    assert (workspace / ".lily" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_a_gitignore_the_person_wrote_in_lily_is_kept(workspace: Path,
                                                       environ: dict[str, str]) -> None:
    (workspace / ".lily").mkdir()
    (workspace / ".lily" / ".gitignore").write_text("!sessions/\n")
    LilyRuntime.start(workspace, {**environ, "LILY_EVENT_LOG": "1"}, session_id="s4")
    assert (workspace / ".lily" / "sessions" / "s4.jsonl").is_file()
    assert (workspace / ".lily" / ".gitignore").read_text() == "!sessions/\n"


def test_event_log_can_be_turned_off(workspace: Path, environ: dict[str, str]) -> None:
    runtime = LilyRuntime.start(workspace, environ)  # environ sets LILY_EVENT_LOG=0
    runtime.run_command(parse_command("/skills"))  # type: ignore[arg-type]
    assert not (workspace / ".lily").exists()


def test_unwritable_log_does_not_stop_the_session(workspace: Path,
                                                  environ: dict[str, str]) -> None:
    (workspace / ".lily").write_text("a file, not a folder")
    runtime = LilyRuntime.start(workspace, {**environ, "LILY_EVENT_LOG": "1"})
    assert runtime.log.problem is not None and "cannot be written" in runtime.log.problem
    sink = RecordingSink()
    for _ in range(2):
        asyncio.run(runtime.run_cell("/skills", sink))
    assert len(sink.notices) == 1  # the person is told, once
    assert sink.notices[0].startswith("The event log is off: the event log ")


@pytest.mark.parametrize("code", ["/skill alpha go", "/a go"])
def test_manual_invocation_is_logged(workspace: Path, environ: dict[str, str], code: str) -> None:
    write_skill(workspace / "skills", "alpha", skill_text("alpha", command="a"))
    runtime = LilyRuntime.start(workspace, {**environ, "LILY_EVENT_LOG": "1"}, session_id="s2")
    runtime.run_command(parse_command(code))  # type: ignore[arg-type]
    lines = (workspace / ".lily" / "sessions" / "s2.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    invoked = [e["data"] for e in events if e["event"] == "skill_invoked"]
    loaded = [e["data"] for e in events if e["event"] == "skill_loaded"]
    assert invoked == [{"name": "alpha", "mode": "manual", "command": code.split()[0][1:]}]
    assert loaded[0]["name"] == "alpha" and len(loaded[0]["digest"]) == 64
    asyncio.run(asyncio.sleep(0))


def test_bundled_skills_and_persona_are_found_from_the_package() -> None:
    from lily_kernel.skills import bundled_dir

    assert (bundled_dir("skills") / "echo" / "SKILL.md").is_file()
    assert (bundled_dir("persona") / "default").is_dir()
