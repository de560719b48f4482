"""A run's limits, as this host applies them: the memory limit on every process
(RLIMIT_DATA), the process limit in bubblewrap's user namespace for a person who is not
root (RLIMIT_NPROC counts that namespace alone), and a control group per run where Lily
may make one (pids.max and the memory limit for the whole run; removed after it, and
those a killed Lily left behind removed by the next)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from lily_kernel.execution.cgroups import RunGroup, cgroup_folders, open_run_group
from lily_kernel.execution.limits import LIMITER, Limits, limited
from lily_kernel.execution.sandbox import find_sandbox

FORKS = "for i in $(seq 60); do sleep 2 & done 2>&1; wait; echo end"


def test_the_memory_limit_holds_for_each_process() -> None:
    done = subprocess.run(
        limited([sys.executable, "-c", "b = bytearray(600 << 20); print('allocated')"],
                Limits(memory_mb=256)), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "MemoryError" in done.stderr
    assert "allocated" not in done.stdout
    small = subprocess.run(limited([sys.executable, "-c", "b = bytearray(50 << 20)"],
                                   Limits(memory_mb=256)), timeout=60)
    assert small.returncode == 0


def test_outside_a_user_namespace_the_process_limit_is_not_set() -> None:
    """There it would count every process of the user (and root is never limited)."""
    done = subprocess.run(
        limited([sys.executable, "-c", "import resource; print(resource.getrlimit("
                 "resource.RLIMIT_NPROC))"], Limits(processes=7)),
        capture_output=True, text=True, timeout=60)
    assert "(7, 7)" not in done.stdout, done.stdout


def test_a_limiter_that_cannot_apply_a_limit_runs_nothing() -> None:
    done = subprocess.run([sys.executable, "-I", "-S", str(LIMITER),
                           "--cgroup=/nonexistent/group", "--", "touch", "/tmp/never"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 126 and "cannot apply the run's limits" in done.stderr


def test_for_a_person_not_root_the_process_limit_holds_in_bubblewrap() -> None:
    """As `nobody`, bubblewrap makes a user namespace: RLIMIT_NPROC then counts the
    sandbox's own processes (Linux >= 5.14), so a fork loop meets it."""
    sandbox = find_sandbox(os.environ)
    setpriv, python = shutil.which("setpriv"), shutil.which("python3", path="/usr/bin:/bin")
    if os.geteuid() != 0 or not sandbox.available or setpriv is None or python is None:
        pytest.skip("needs root (to become nobody), bubblewrap, setpriv and a system python3")
    assert sandbox.bwrap is not None
    with tempfile.TemporaryDirectory(dir="/var/tmp") as folder:  # where nobody may read
        os.chmod(folder, 0o755)
        shutil.copy(LIMITER, folder)
        inner = limited(["/bin/sh", "-c", FORKS], Limits(processes=20))
        inner[0], inner[3] = python, str(Path(folder) / LIMITER.name)
        command = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                   sandbox.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                   "--unshare-pid", "--unshare-net", "--die-with-parent", "--", *inner]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd="/")
    if "setting up uid map" in done.stderr or "No permissions to create" in done.stderr:
        pytest.skip(f"no user namespaces for nobody here: {done.stderr.strip()}")
    assert "Cannot fork" in done.stdout + done.stderr, (done.stdout, done.stderr)


@pytest.fixture
def group() -> RunGroup:
    if not cgroup_folders():
        pytest.skip("no control group Lily may make here")
    made = open_run_group(Limits(memory_mb=256, processes=20))
    if made is None:
        pytest.skip("no control group Lily may make here (not root, or read-only)")
    return made


def test_a_run_group_limits_the_whole_run_and_goes_with_it(group: RunGroup) -> None:
    done = subprocess.run(group.argv(["/bin/sh", "-c", FORKS]), capture_output=True,
                          text=True, timeout=60)
    assert "Cannot fork" in done.stdout + done.stderr, (done.stdout, done.stderr)
    memory = [f for f in group.folders if (f / "memory.limit_in_bytes").exists()
              or (f / "memory.max").exists()]
    if memory:  # the whole run's memory: processes each under it together over it
        code = "import time; b = bytearray(150 << 20); time.sleep(2); print('kept')"
        both = subprocess.run(group.argv(["/bin/sh", "-c", f"{sys.executable} -c \"{code}\" & "
                                          f"{sys.executable} -c \"{code}\"; wait"]),
                              capture_output=True, text=True, timeout=60)
        assert both.stdout.count("kept") < 2, (both.stdout, both.stderr)
    asyncio.run(group.close())
    assert not any(f.exists() for f in group.folders)


def test_groups_a_killed_lily_left_are_removed_by_the_next_run(group: RunGroup) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()  # a process that no longer runs, as a Lily killed with kill -9
    stale = [f.parent / f"lily-{gone.pid}-left" for f in group.folders]
    for folder in stale:
        folder.mkdir()
    asyncio.run(group.close())
    again = open_run_group(Limits())
    assert again is not None
    asyncio.run(again.close())
    assert not any(f.exists() for f in stale)
