"""The workspace's own repository in the sandbox (execution/protected.py's git rules),
with real git and real bubblewrap: `git commit`, `git branch` and `git worktree add` work;
what git reads as configuration or runs later (`.git/hooks`, `.git/config`, `info/`,
`modules/`, a linked worktree's `commondir`) stays read-only, a hook cannot be planted
(an existing hooks folder or a missing one), `.git` cannot be moved away and made again,
and a `commondir` a run made is set aside after it."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from lily_kernel.execution.limits import Limits
from lily_kernel.execution.plan import plan_process
from lily_kernel.execution.protected import find_protected, held_paths
from lily_kernel.execution.runner import RunResult, run_process
from lily_kernel.execution.sandbox import find_sandbox
from tests.core.test_scripts import sandbox_or_skip

IDENTITY = {"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.org",
            "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.org"}
ENVIRON = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
HOOK = "#!/bin/sh\necho planted > planted.txt\n"


@pytest.fixture(autouse=True)
def _sandbox_and_git() -> None:
    sandbox_or_skip()
    if shutil.which("git") is None:
        pytest.skip("git is not installed")


def git(workspace: Path, *args: str) -> str:
    """git on the host, as the person runs it."""
    return subprocess.run(["git", "-C", str(workspace), *args], check=True, text=True,
                          capture_output=True, env={**os.environ, **IDENTITY}).stdout


def repository(tmp_path: Path) -> Path:
    workspace = (tmp_path / "workspace").resolve()
    workspace.mkdir()
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "notes.md").write_text("first\n")
    git(workspace, "add", "notes.md")
    git(workspace, "commit", "-q", "-m", "first")
    return workspace


def sandboxed(command: str, workspace: Path) -> RunResult:
    plan = plan_process(["/bin/sh", "-c", command], workspace, (), ENVIRON,
                        find_sandbox(ENVIRON), limits=Limits(), allowed_env=())
    env = {**plan.env, **IDENTITY}
    return asyncio.run(run_process(type(plan)(**{**vars(plan), "env": env}), 30))


def test_commit_branch_and_worktree_add_work(tmp_path: Path) -> None:
    workspace = repository(tmp_path)
    done = sandboxed("echo second >> notes.md && git commit -qam second && "
                     "git branch feature && git worktree add -q trees/feature feature && "
                     "echo ok", workspace)
    assert done.exit_code == 0, done.output
    assert git(workspace, "log", "--format=%s").split() == ["second", "first"]
    assert "feature" in git(workspace, "branch", "--list")
    assert (workspace / "trees" / "feature" / "notes.md").read_text() == "first\nsecond\n"
    assert (workspace / ".git" / "worktrees" / "feature").is_dir()
    # A second run commits in the worktree it added (its folder is the run's).
    again = sandboxed("cd trees/feature && echo more >> notes.md && git commit -qam more",
                      workspace)
    assert again.exit_code == 0, again.output
    assert git(workspace, "log", "--format=%s", "feature").split() == ["more", "second", "first"]


def test_hooks_and_config_stay_read_only(tmp_path: Path) -> None:
    workspace = repository(tmp_path)
    config = (workspace / ".git" / "config").read_bytes()
    done = sandboxed(
        f"printf '{HOOK}' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; "
        "git config core.hooksPath elsewhere; git config core.fsmonitor 'touch x'; "
        "echo '* filter=evil' > .git/info/attributes; mv .git/hooks .git/old-hooks; "
        "mv .git .git-old; mkdir .git/modules/sub; echo ran", workspace)
    assert done.exit_code == 0 and "ran" in done.output.splitlines()  # (stdout, stderr: no order between)
    for refused in ("cannot create .git/hooks/pre-commit: Read-only file system",
                    "could not write config file .git/config: Device or resource busy",
                    "cannot create .git/info/attributes: Read-only file system",
                    "cannot move '.git/hooks' to '.git/old-hooks': Device or resource busy",
                    "cannot move '.git' to '.git-old': Device or resource busy",
                    "cannot create directory \u2018.git/modules/sub\u2019: Read-only file "
                    "system"):
        assert refused in done.output
    assert not (workspace / ".git" / "config.lock").exists()  # git let go of its lock
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert (workspace / ".git" / "config").read_bytes() == config
    assert not (workspace / ".git" / "info" / "attributes").exists()
    assert (workspace / ".git" / "hooks").is_dir() and (workspace / ".git" / "HEAD").exists()
    assert not (workspace / ".git-old").exists() and not (workspace / ".git" / "modules").exists()
    git(workspace, "commit", "-q", "--allow-empty", "-m", "the person's")  # no hook ran
    assert not (workspace / "planted.txt").exists()


def test_a_missing_hooks_folder_cannot_be_made(tmp_path: Path) -> None:
    workspace = repository(tmp_path)
    shutil.rmtree(workspace / ".git" / "hooks")
    done = sandboxed(f"mkdir -p .git/hooks; printf '{HOOK}' > .git/hooks/pre-commit; "
                     "chmod +x .git/hooks/pre-commit; echo ran", workspace)
    assert "ran" in done.output.splitlines()
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    git(workspace, "commit", "-q", "--allow-empty", "-m", "the person's")
    assert not (workspace / "planted.txt").exists()


def test_a_commondir_a_run_made_is_set_aside(tmp_path: Path) -> None:
    workspace = repository(tmp_path)
    evil = workspace / "evil"
    done = sandboxed("mkdir -p evil/hooks && cp .git/config evil/config && "
                     "echo \"$PWD/evil\" > .git/commondir && echo ran", workspace)
    assert "ran" in done.output.splitlines()
    assert "[removed after the run: .git/commondir" in done.output
    assert not (workspace / ".git" / "commondir").exists()
    assert evil.is_dir()  # the run's files are its own; only what git would read is not
    assert git(workspace, "rev-parse", "--git-common-dir").strip() == ".git"


def test_a_linked_worktrees_redirection_stays_read_only(tmp_path: Path) -> None:
    workspace = repository(tmp_path)
    git(workspace, "worktree", "add", "-q", str(tmp_path / "outside"), "-b", "side")
    folder = workspace / ".git" / "worktrees" / "outside"
    commondir = (folder / "commondir").read_text()
    done = sandboxed("echo /tmp/evil > .git/worktrees/outside/commondir; "
                     "mv .git/worktrees/outside .git/worktrees/moved; "
                     "mv .git/worktrees .git/trees; echo ran", workspace)
    assert "ran" in done.output.splitlines()
    assert (folder / "commondir").read_text() == commondir
    assert not (workspace / ".git" / "trees").exists()


def test_the_rules_name_what_git_reads(tmp_path: Path) -> None:
    workspace = repository(tmp_path)
    git_dir = workspace / ".git"
    held = held_paths(workspace)
    assert {git_dir / n for n in ("config", "hooks", "info", "modules")} <= set(held)
    assert git_dir not in held and workspace / "lily.yaml" in held
    found = find_protected(workspace)
    assert git_dir in found.pinned and git_dir not in found.read_only
    assert git_dir / "config" in found.read_only
    # A workspace whose .git is a file (a repository elsewhere) keeps it read-only whole.
    other = (tmp_path / "other").resolve()
    other.mkdir()
    (other / ".git").write_text("gitdir: /elsewhere\n")
    assert other / ".git" in held_paths(other) and find_protected(other).pinned == ()
