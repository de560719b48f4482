"""One notebook = one session: snapshots are stable, kernels are separate, bad setups survive."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.conftest import write_skill
from tests.kernel.conftest import lily_kernel


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_two_kernels_keep_separate_sessions_and_stable_snapshots(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    write_skill(workspace / "skills", "first", "---\nsummary: The first one.\n---\n\nBody.\n")
    (workspace / "persona" / "critic").mkdir(parents=True)
    (workspace / "persona" / "critic" / "SOUL.md").write_text("You are a critic.\n")
    with lily_kernel(workspace, tmp_path / "home", LILY_EVENT_LOG="1") as a, \
            lily_kernel(workspace, tmp_path / "home", LILY_EVENT_LOG="1") as b:
        # Both sessions have started (they start in the background) before the write.
        assert "first" in a.execute("/skills").plain and "first" in b.execute("/skills").plain
        write_skill(workspace / "skills", "late", "---\nsummary: Added on disk.\n---\n\nB.\n")

        # The file is on disk, but neither session sees it until it reloads.
        for kernel in (a, b):
            skills = kernel.execute("/skills")
            assert "late" not in skills.plain and "snapshot 1," in skills.plain
            assert kernel.execute("/help late").reply["evalue"] == (
                "Error: no skill named 'late' in this session (snapshot 1).")

        reload = a.execute("/reload_skills")
        assert reload.status == "ok"
        assert "Reloaded skills: snapshot 2 (was 1)" in reload.plain
        assert re.search(r"^added +late$", reload.plain, re.M)
        assert "late" in a.execute("/skills").plain
        assert "late" not in b.execute("/skills").plain  # b's snapshot did not move

        assert a.execute("/agent critic").status == "ok"
        assert a.execute("/agent").plain.startswith("Agent: critic")
        assert b.execute("/agent").plain.startswith("Agent: default")

    logs = sorted((workspace / ".lily" / "sessions").glob("*.jsonl"))
    assert len(logs) == 2
    sessions = [_events(p) for p in logs]
    ids = {e["session_id"] for events in sessions for e in events}
    assert len(ids) == 2
    commands = [[e["data"]["name"] for e in events if e["event"] == "command"]
                for events in sessions]
    assert sorted(c.count("reload_skills") for c in commands) == [0, 1]


def test_a_broken_setup_never_kills_the_kernel_and_recovers_once_fixed(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    config = workspace / "lily.yaml"
    config.write_text("agent: [unclosed\n")
    with lily_kernel(workspace, tmp_path / "home") as kernel:
        for code in ("/skills", "hello"):
            run = kernel.execute(code)
            assert run.status == "error"
            assert run.reply["ename"] == "ConfigError"
            assert run.reply["evalue"].startswith(
                "Error: Lily could not start this notebook's session: ")
            assert str(config) in run.reply["evalue"] and "invalid YAML" in run.reply["evalue"]
            assert run.reply["evalue"].endswith("Fix it and run the cell again "
                                                "(no restart needed).")
            assert run.reply["traceback"] == [run.reply["evalue"]]
        assert kernel.request("complete", "/sk")["matches"] == []
        assert kernel.request("kernel_info")["implementation"] == "lily"

        config.write_text("colour: blue\n")
        run = kernel.execute("/skills")
        assert run.reply["ename"] == "ConfigError"
        assert "key 'colour': unknown key" in run.reply["evalue"]

        # Config fixed, but the skills root is a file: a clear error, still alive.
        config.write_text("agent: default\n")
        (workspace / "skills").write_text("not a folder\n")
        run = kernel.execute("/skills")
        assert run.reply["ename"] == "SkillRootError"
        assert "Cannot read the workspace skills root" in run.reply["evalue"]

        (workspace / "skills").unlink()
        write_skill(workspace / "skills", "fixed", "---\nsummary: Works now.\n---\n\nB.\n")
        run = kernel.execute("/skills")
        assert run.status == "ok"
        assert "fixed" in run.plain and "snapshot 1," in run.plain
        assert kernel.request("complete", "/help fi")["matches"] == ["fixed"]
        assert kernel.km.is_alive()


def test_a_skills_link_loop_and_a_lily_yaml_folder_are_clear_errors(tmp_path: Path) -> None:
    """Neither a traceback on every command nor a silently ignored lily.yaml."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "skills").symlink_to("skills")
    with lily_kernel(workspace, tmp_path / "home") as kernel:
        for code in ("/skills", "/help", "hello"):
            run = kernel.execute(code)
            assert run.reply["ename"] == "SkillRootError", run.reply
            assert "Cannot read the workspace skills root" in run.reply["evalue"]
            assert "Too many levels of symbolic links" in run.reply["evalue"]
            assert run.reply["traceback"] == [run.reply["evalue"]]
        (workspace / "skills").unlink()
        (workspace / "lily.yaml").mkdir()
        run = kernel.execute("/skills")
        assert run.reply["ename"] == "ConfigError"
        assert run.reply["evalue"].startswith(
            f"Error: Lily could not start this notebook's session: {workspace / 'lily.yaml'}: "
            "cannot read the file (it is a folder).")
        (workspace / "lily.yaml").rmdir()
        assert kernel.execute("/skills").status == "ok"


def test_a_tools_list_written_with_a_star_reads_as_the_star_alone(tmp_path: Path) -> None:
    """`tools: {allow: ["*"]}` stopped every cell (`unknown tool '*'`) while `allow: "*"`
    worked; `ask: shell`, one name without a list, was refused too."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "lily.yaml").write_text('tools:\n  allow: ["*"]\n  ask: shell\n')
    with lily_kernel(workspace, tmp_path / "home") as kernel:
        run = kernel.execute("/help")
        assert run.status == "ok", run.reply
        assert re.search(r"^allow +\*$", run.plain, re.M), run.plain
        assert re.search(r"^ask +shell$", run.plain, re.M), run.plain
        assert re.search(r"^shell +ask first ", run.plain, re.M), run.plain
