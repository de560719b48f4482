"""The sandbox's mount plan: which mount covers each path, in bubblewrap's order."""

from __future__ import annotations

from pathlib import Path

from lily_kernel.execution.mounts import MountPlan, Shows, cover, plan_mounts


def _home(tmp_path: Path) -> Path:
    """A home folder with a Lily home (a user skill), dotfiles, a folder, a file, a link."""
    home = tmp_path / "users" / "alice"
    (home / ".lily" / "skills" / "pdf").mkdir(parents=True)
    (home / ".ssh").mkdir()
    (home / "work").mkdir()
    (home / "notes.txt").write_text("notes\n")
    (home / "current").symlink_to("work")
    return home


def _shows(plan: MountPlan, path: Path) -> Shows:
    return cover(plan.mounts, path).shows


def test_no_placeholder_where_the_sandbox_is_already_read_only_or_hidden(tmp_path) -> None:
    home = _home(tmp_path)
    lily = home / ".lily"
    plan = plan_mounts(home, [home / "lily.yaml", home / "skills", lily, lily / "skills",
                              lily / "persona", lily / "trust.json"], home,
                       [lily / "skills" / "pdf"])
    assert plan.placeholders == ()
    assert _shows(plan, home / "new.txt") is Shows.EMPTY  # nothing new at the top
    assert _shows(plan, lily / "persona") is Shows.EMPTY
    assert _shows(plan, home / ".ssh") is Shows.EMPTY
    assert _shows(plan, home / "work" / "x") is Shows.HOST_WRITABLE
    assert _shows(plan, home / "notes.txt") is Shows.HOST_WRITABLE
    assert _shows(plan, lily / "skills" / "pdf") is Shows.HOST_READ_ONLY
    argv = " ".join(plan.argv)
    assert f"--symlink work {home / 'current'}" in argv
    # The empty home folder is made read-only last, after the skill's mount point in it.
    assert argv.index(f"--ro-bind {lily / 'skills' / 'pdf'}") < argv.index(
        f"--remount-ro {home}")


def test_a_workspace_holding_the_home_folder_keeps_placeholders_outside_it(tmp_path) -> None:
    home = _home(tmp_path)
    workspace = home.parent
    plan = plan_mounts(workspace, [workspace / "lily.yaml", home / ".lily" / "persona"], home, [])
    assert workspace / "lily.yaml" in plan.placeholders
    assert not any(p.is_relative_to(home) for p in plan.placeholders)
    assert _shows(plan, workspace / "shared") is Shows.HOST_WRITABLE
    assert _shows(plan, home / ".bash_aliases") is Shows.EMPTY


def test_a_read_only_bind_over_a_folder_lays_again_what_was_inside_it(tmp_path) -> None:
    """A skills root set to the workspace that holds the home folder: the workspace is
    read-only, and the home folder's dotfiles stay out (the bind over the workspace
    would otherwise show them again)."""
    home = _home(tmp_path)
    workspace = home.parent
    plan = plan_mounts(workspace, [workspace], home, [home / ".lily" / "skills" / "pdf"])
    assert _shows(plan, workspace / "x") is Shows.HOST_READ_ONLY
    assert _shows(plan, home / ".ssh") is Shows.EMPTY
    assert _shows(plan, home / "work" / "x") is Shows.HOST_READ_ONLY
    assert _shows(plan, home / ".lily" / "skills" / "pdf") is Shows.HOST_READ_ONLY
    assert plan.placeholders == ()


def test_a_workspace_inside_a_protected_folder_is_read_only(tmp_path) -> None:
    home = _home(tmp_path)
    workspace = home / ".lily" / "skills" / "pdf"  # developing a user skill in place
    plan = plan_mounts(workspace, [home / ".lily" / "skills"], home, [])
    assert _shows(plan, workspace / "SKILL.md") is Shows.HOST_READ_ONLY
