"""Lily's private folders in the temporary folder (execution/folders.py): what a killed Lily
left is removed by the next one; a live Lily's, another user's, a link, never."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lily_kernel.execution import folders
from lily_kernel.execution.folders import make_private_folder, sweep_private_folders


def _ended_pid() -> int:
    """The pid of a process that has ended."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _start(pid: int | str) -> str:
    started = folders._started(pid)
    assert started is not None
    return started


def test_a_killed_lilys_folders_go_and_a_live_ones_stay(tmp_path: Path) -> None:
    dead = tmp_path / f"lily-python-{_ended_pid()}.12345-abc"
    # The pid of a live process, but not the process that made it (it started later).
    reused = tmp_path / f"lily-mcp-{os.getpid()}.{int(_start('self')) - 1}-def"
    live = tmp_path / f"lily-python-{os.getpid()}.{_start('self')}-ghi"
    for folder in (dead, reused, live):
        (folder / "inner").mkdir(parents=True)
        (folder / "kernel.json").write_text("{}")
    outside = tmp_path / "outside.txt"
    outside.write_text("the person's")
    (dead / "link").symlink_to(outside)  # removed as a link, never followed
    link = tmp_path / f"lily-python-{_ended_pid()}.1-jkl"
    link.symlink_to(tmp_path / "kept", target_is_directory=True)
    (tmp_path / "kept").mkdir()
    other = tmp_path / "lily-python-notapid-x"
    other.mkdir()
    sweep_private_folders(tmp_path)
    assert not dead.exists() and not reused.exists()
    assert live.is_dir() and (live / "kernel.json").is_file()
    assert outside.read_text() == "the person's"
    assert link.is_symlink() and (tmp_path / "kept").is_dir()
    assert other.is_dir()


def test_a_new_folder_is_private_and_named_for_its_owner(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    left = tmp_path / f"lily-python-{_ended_pid()}.1-old"
    left.mkdir()
    made = make_private_folder("python")
    assert made.parent == tmp_path and made.name.startswith(
        f"lily-python-{os.getpid()}.{_start('self')}-")
    assert made.stat().st_mode & 0o777 == 0o700
    assert not left.exists()


KILLED_OWNER = """
import os, signal, sys
from pathlib import Path
from lily_kernel.execution.folders import remove_with_owner
folder = Path(sys.argv[1])
folder.mkdir()
(folder / "proxy.sock").write_text("")
remove_with_owner(folder)
print("watched", flush=True)
sys.stdin.readline()
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_folder_removed_with_its_owner_goes_when_the_owner_is_killed(
        tmp_path: Path) -> None:
    """The proxy's socket folder lives as long as the session; `kill -9` of its owner
    leaves nothing behind (the janitor waits on the owner's pidfd), and while the owner
    lives the folder stays."""
    folder = tmp_path / "lily-network-x"
    owner = subprocess.Popen([sys.executable, "-c", KILLED_OWNER, str(folder)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             cwd=Path(folders.__file__).parents[2])
    assert owner.stdout is not None and owner.stdin is not None
    assert owner.stdout.readline().strip() == "watched"
    assert (folder / "proxy.sock").exists()  # the owner lives: kept
    owner.stdin.write("\n")
    owner.stdin.flush()
    assert owner.wait(timeout=60) == -9
    deadline = time.monotonic() + 60
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not folder.exists()
