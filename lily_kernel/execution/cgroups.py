"""A control group of its own for each sandboxed run, where the host lets Lily make one.

Resource limits (execution/limits.py) are per process, and Linux never applies the
process limit to root. A control group limits a whole run, every process it starts
counted together: `pids.max` (a fork bomb meets it, root or not) and the memory limit
(`memory.limit_in_bytes`, cgroup v1; `memory.max`, v2; files in the sandbox's private
/tmp count too). Lily makes one under its own group, in each hierarchy whose folder it
may write (root in most containers; a cgroup v2 tree only where the controllers are
already enabled for its children), joins the run into it before bubblewrap starts
(execution/limiter.py `--cgroup`), and removes it when the run ends, killing anything
left in it. Where none can be made, `open_run_group` says so with None and the run has
the per-process limits alone. Groups left by a Lily that was killed (kill -9) are
removed by the next run's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lily_kernel.execution.limits import LIMITER, Limits

__all__ = ["RunGroup", "cgroup_folders", "open_run_group"]

_PREFIX = "lily-"
# Per controller, per cgroup version: the files its limits are written to.
_V1 = {"pids": ("pids.max",), "memory": ("memory.limit_in_bytes",)}
_V2 = {"pids": ("pids.max",), "memory": ("memory.max",)}


@dataclass(frozen=True)
class _Place:
    """Where this process's group is, in one hierarchy, and what is limited there."""

    folder: Path
    version: int  # 1 or 2
    controllers: tuple[str, ...]


def _mounts() -> dict[tuple[int, frozenset[str]], tuple[str, Path]]:
    """The cgroup file systems mounted here: (version, controllers) -> (root, folder)."""
    found: dict[tuple[int, frozenset[str]], tuple[str, Path]] = {}
    with open("/proc/self/mountinfo") as mountinfo:
        for line in mountinfo:
            head, _, tail = line.partition(" - ")
            fields, rest = head.split(), tail.split()
            if len(fields) < 5 or len(rest) < 3 or rest[0] not in ("cgroup", "cgroup2"):
                continue
            version = 2 if rest[0] == "cgroup2" else 1
            controllers = frozenset(rest[2].split(",")) & set(_V1) if version == 1 else \
                frozenset()
            found.setdefault((version, controllers), (fields[3], Path(fields[4])))
    return found


def _places() -> list[_Place]:
    """This process's group in each hierarchy that handles the pids or memory controller."""
    mounts = _mounts()
    places = []
    with open("/proc/self/cgroup") as groups:
        for line in groups:
            _, names, path = line.rstrip("\n").split(":", 2)
            version = 2 if not names else 1
            wanted = frozenset(names.split(",")) & set(_V1) if names else frozenset()
            if version == 1 and not wanted:
                continue
            mount = mounts.get((version, wanted))
            if mount is None or not (path + "/").startswith(mount[0].rstrip("/") + "/"):
                continue
            folder = mount[1] / path[len(mount[0].rstrip("/")):].lstrip("/")
            if version == 2:
                with contextlib.suppress(OSError):
                    enabled = (folder / "cgroup.subtree_control").read_text().split()
                    wanted = frozenset(enabled) & set(_V2)
            if wanted:
                places.append(_Place(folder, version, tuple(sorted(wanted))))
    return places


def cgroup_folders() -> list[Path]:
    """The folders a run's groups would be made in (empty: none here)."""
    try:
        return [p.folder for p in _places()]
    except (OSError, ValueError):
        return []


def _sweep(folder: Path) -> None:
    """Remove the groups a Lily process that no longer runs left behind (it was killed
    before its run ended): `lily-<pid>-…`, empty of processes."""
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            owner = entry.name.removeprefix(_PREFIX).split("-")[0]
            if entry.name.startswith(_PREFIX) and owner.isdigit() and \
                    not Path(f"/proc/{owner}").exists():
                with contextlib.suppress(OSError):
                    entry.rmdir()


def _values(place: _Place, limits: Limits) -> list[tuple[str, str]]:
    files = _V1 if place.version == 1 else _V2
    value = {"pids": str(limits.processes), "memory": str(limits.memory_bytes)}
    return [(name, value[c]) for c in place.controllers for name in files[c]]


# How long a group's end waits for its last processes to be reaped: 40 tries, 50 ms apart
# (what is left after that is removed by a later sweep).
_CLOSE_TRIES, _CLOSE_PAUSE = 40, 0.05


@dataclass(frozen=True)
class RunGroup:
    """The groups of one run, one per hierarchy."""

    folders: tuple[Path, ...]

    def argv(self, command: Sequence[str]) -> list[str]:
        """`command` started inside the groups (it joins them, then becomes the command:
        the same process, so bubblewrap's parent is still Lily's thread)."""
        joins = [f"--cgroup={folder}" for folder in self.folders]
        return [sys.executable, "-I", "-S", str(LIMITER), *joins, "--", *command]

    def pids(self) -> set[int]:
        found: set[int] = set()
        for folder in self.folders:
            with contextlib.suppress(OSError):
                found |= {int(p) for p in (folder / "cgroup.procs").read_text().split()}
        return found

    def kill(self) -> bool:
        """Kill whatever is left in the groups and remove those that are empty; whether
        all are gone (one whose processes are not yet reaped stays, for `close` to try
        again or the next run's sweep)."""
        for pid in self.pids():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        gone = True
        for folder in self.folders:
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                gone = False
        return gone

    async def close(self) -> None:
        """Kill whatever is left in the groups, then remove them (a group goes once its
        last process has been reaped: a few tries)."""
        import asyncio

        for _ in range(_CLOSE_TRIES):
            if self.kill():
                return
            await asyncio.sleep(_CLOSE_PAUSE)

    def close_now(self) -> None:
        """`close` for a caller without an event loop (the Python kernel's end): the same
        tries, waited for in this thread."""
        import time

        for _ in range(_CLOSE_TRIES):
            if self.kill():
                return
            time.sleep(_CLOSE_PAUSE)


def open_run_group(limits: Limits) -> RunGroup | None:
    """A new group under this process's own, in each hierarchy where one can be made,
    with `limits` written; None where none can be (not root, a read-only cgroup file
    system, a cgroup v2 tree without the controllers for children)."""
    made: list[Path] = []
    try:
        places = _places()
    except (OSError, ValueError):
        return None
    for place in places:
        _sweep(place.folder)
        folder = place.folder / f"{_PREFIX}{os.getpid()}-{os.urandom(6).hex()}"
        try:
            folder.mkdir()
        except OSError:
            continue
        try:
            for name, value in _values(place, limits):
                (folder / name).write_text(value)
        except OSError:
            with contextlib.suppress(OSError):
                folder.rmdir()
            continue
        made.append(folder)
    return RunGroup(tuple(made)) if made else None
