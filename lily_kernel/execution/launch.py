"""How a run is started and ended: the runner's one seam between a run's output (its
pipes, read by execution/runner.py) and the processes that make it.

`_Here` starts a planned command line here, in its own process group (and control group
where the host allows it: execution/cgroups.py), and kills both as it ends; the shell's
session sandbox starts a command in a sandbox that outlives it
(execution/shell_sandbox.py). Either is a `Started`. `kill_holders` ends what still holds
a run's output once the run itself ended, wherever it runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Mapping
    from pathlib import Path

    from lily_kernel.execution.cgroups import RunGroup
    from lily_kernel.execution.limits import Limits


class Planned(Protocol):
    """What starting a planned run reads of its plan (execution/runner.py's ProcessPlan)."""

    @property
    def argv(self) -> tuple[str, ...]: ...
    @property
    def cwd(self) -> Path: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def sandboxed(self) -> bool: ...
    @property
    def limits(self) -> Limits | None: ...

__all__ = ["STOP_GRACE", "Launch", "Started", "kill_holders", "start_here"]


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


# How long the process started (the reaper, or bubblewrap) has, after SIGTERM, to end
# what the script started before its whole group is killed.
STOP_GRACE = 2.0


async def _stop(process: asyncio.subprocess.Process) -> None:
    """End a run early (time limit, stop button): SIGTERM to the process started, which
    ends everything the script started (execution/reaper.py; bubblewrap's PID namespace),
    then SIGKILL to its process group."""
    import asyncio

    with contextlib.suppress(ProcessLookupError, PermissionError):
        process.send_signal(signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(STOP_GRACE):
                await process.wait()
    _kill_group(process)
    await process.wait()


class Started(Protocol):
    """A run once started, as `run_process` drives it: by Lily here (`_Here`), or in the
    shell's session sandbox (execution/shell_sandbox.py)."""

    async def wait(self) -> int:
        """Its exit status, once its first process ended."""

    async def stop(self) -> None:
        """End it and everything it started now (the time limit, the stop button)."""

    def ended(self) -> None:
        """Once it ended: what it leaves behind that must not live on."""

    async def close(self) -> None:
        """Once its output is done (its holders ended): what is left of the run."""


# How a run is started, given its stdout's and stderr's pipe write ends (the default:
# here, its command line as planned).
Launch = Callable[[int, int], Awaitable[Started]]


@dataclass
class _Here:
    """A run started here: its own process group, and its own control group where the
    host allows one (execution/cgroups.py), both killed as it ends."""

    process: asyncio.subprocess.Process
    group: RunGroup | None

    @classmethod
    async def start(cls, plan: Planned, stdout: int, stderr: int) -> _Here:
        import asyncio

        from lily_kernel.execution.cgroups import open_run_group

        group = open_run_group(plan.limits) if plan.sandboxed and plan.limits else None
        argv = group.argv(plan.argv) if group is not None else plan.argv
        try:
            process = await asyncio.create_subprocess_exec(
                *argv, cwd=plan.cwd, env=plan.env, stdin=asyncio.subprocess.DEVNULL,
                stdout=stdout, stderr=stderr,
                start_new_session=True)  # its own process group: killed as a whole
        except OSError:
            if group is not None:
                await group.close()
            raise
        return cls(process, group)

    async def wait(self) -> int:
        return await self.process.wait()

    async def stop(self) -> None:
        await _stop(self.process)

    def ended(self) -> None:
        _kill_group(self.process)

    async def close(self) -> None:
        if self.group is not None:  # whatever is left in the run's control group
            await self.group.close()


def kill_holders(pipes: list[int]) -> None:
    """Kill every process of ours still holding an output pipe's write end: a child the
    script detached (setsid, a double fork) outside its process group. Linux: by the
    pipes' inodes in /proc/<pid>/fd. Returns once they have ended (a second at most), so
    that what a run left running is known without them."""
    wanted = {f"pipe:[{os.fstat(pipe).st_ino}]" for pipe in pipes}
    me = os.getpid()
    killed = []
    for pid in filter(str.isdigit, os.listdir("/proc") if os.path.isdir("/proc") else ()):
        if int(pid) == me:
            continue
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{pid}/fd/{fd}") in wanted:
                        with contextlib.suppress(OSError):  # (Linux >= 5.3)
                            killed.append(os.pidfd_open(int(pid)))
                        os.kill(int(pid), signal.SIGKILL)
                        break
    _await_ends(killed, HOLDERS_END)


# How long the runner waits for the holders it killed to end.
HOLDERS_END = 1.0


def _await_ends(handles: list[int], seconds: float) -> None:
    """Wait until the processes of these pidfds have ended (or `seconds` passed)."""
    import select
    import time

    deadline = time.monotonic() + seconds
    try:
        waiting = list(handles)
        while waiting and (left := deadline - time.monotonic()) > 0:
            ended, _, _ = select.select(waiting, [], [], left)
            waiting = [h for h in waiting if h not in ended]
    finally:
        for handle in handles:
            os.close(handle)


async def start_here(plan: Planned, stdout: int, stderr: int) -> Started:
    """`plan`'s command line started here (the default `Launch`)."""
    return await _Here.start(plan, stdout, stderr)
