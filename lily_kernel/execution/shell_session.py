"""The shell's commands in one turn share one sandbox (execution/shell_sandbox.py), which
lives until the turn ends (`end_turn`; the session's end closes it too): what a command
leaves running in the background (tmux's server, a dev server started with `nohup … &`)
is there for the turn's next command,
on the same /tmp, the same PID and network namespaces (127.0.0.1), the same mounts,
limits, environment and way out.

`ShellSessions.run` runs one command there, one at a time. Before it, the sandbox is
replaced (what ran in it ended) when it no longer fits: the workspace outgrew its mounts
(`MountPlan.changes`: a protected file appeared), or the command was planned with other
settings (`SessionSpec`: the environment, the limits, the network's way out, Lily's
protected paths, the Python environment shown), or it had ended. After it: what the
command made that the rules forbid is set aside (`MountPlan.remove_made`), and what it
left running is said (`SessionOutcome`: tools/shell.py words it).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from lily_kernel.errors import ToolError
from lily_kernel.execution.limits import Limits
from lily_kernel.execution.runner import OnOutput, ProcessPlan, RunResult, run_process
from lily_kernel.execution.shell_sandbox import (
    LeftRunning,
    SessionGoneError,
    SessionRun,
    ShellSandbox,
)

if TYPE_CHECKING:
    from lily_kernel.execution.way_out import WayOut

__all__ = ["Replaced", "SessionOutcome", "SessionSpec", "ShellSessions"]


@dataclass(frozen=True)
class SessionSpec:
    """What a command's session sandbox is made of besides its mounts (which say what
    changed themselves): a command planned with another spec gets a new sandbox."""

    bwrap: str
    workspace: Path
    environment: tuple[tuple[str, str], ...]  # the variables every command gets
    limits: Limits
    network: WayOut | None  # the proxy's socket and bridge
    protected: tuple[Path, ...]  # Lily's own paths, kept read-only
    python: tuple[Path, ...]  # the Python environment's folders shown, its installs

    @classmethod
    def of(cls, bwrap: str, plan: ProcessPlan, way_out: WayOut | None,
           protected: Sequence[Path], python: Sequence[Path]) -> SessionSpec:
        assert plan.limits is not None
        return cls(bwrap, plan.cwd, tuple(sorted(plan.env.items())), plan.limits, way_out,
                   tuple(protected), tuple(python))

    def differs(self, other: SessionSpec) -> tuple[str, ...]:
        """The names of what differs (prompting/runs.py words them)."""
        return tuple(f.name for f in fields(self)
                     if getattr(self, f.name) != getattr(other, f.name))


@dataclass(frozen=True)
class Replaced:
    """The sandbox replaced before a command: why (`SessionSpec` field names, "outgrown"
    with what `changed` in the workspace, or "ended": it had ended), what ran in it
    (`ended`: ended with it)."""

    why: tuple[str, ...]
    ended: LeftRunning
    changed: tuple[str, ...] = ()


@dataclass(frozen=True)
class SessionOutcome:
    """A command's run in the session's sandbox: its result, what it left running, the
    sandbox replaced before it (None: not), what was set aside after it."""

    result: RunResult
    left: LeftRunning
    replaced: Replaced | None = None
    removed: tuple[str, ...] = ()


@dataclass
class ShellSessions:
    """The session's shell sandbox, made with the first command, replaced when it no
    longer fits, ended with the session (`close`)."""

    _sandbox: ShellSandbox | None = field(default=None, repr=False)
    _spec: SessionSpec | None = field(default=None, repr=False)
    _known: LeftRunning = field(default_factory=LeftRunning, repr=False)
    _lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = field(default=None,
                                                                          repr=False)

    @property
    def sandbox(self) -> ShellSandbox | None:
        return self._sandbox

    async def run(self, plan: ProcessPlan, spec: SessionSpec, argv: Sequence[str],
                  timeout: float, on_output: OnOutput) -> SessionOutcome:
        """Run `argv` (planned as `plan`: its folder, environment and mounts) in the
        session's sandbox; raises ToolError when it cannot start."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:  # (one loop after another)
            self._lock = (loop, asyncio.Lock())
        async with self._lock[1]:
            replaced = await self._fit(spec)
            sandbox = self._sandbox or await self._start(plan, spec)
            runs: list[SessionRun] = []

            async def launch(stdout: int, stderr: int) -> SessionRun:
                run = await sandbox.launch(argv, plan.env, plan.cwd, stdout, stderr)
                runs.append(run)
                return run

            try:
                result = await run_process(replace(plan, mounts=None), timeout,
                                           on_output=on_output, launch=launch)
            finally:  # what it (or what runs there) made that the rules forbid
                removed = await asyncio.shield(asyncio.to_thread(sandbox.mounts.remove_made))
            if sandbox.alive:  # (one that ended is replaced, and said, before the next)
                self._known = await sandbox.running()
            left = runs[0].left if runs else LeftRunning()
            return SessionOutcome(result, left, replaced, removed)

    async def _fit(self, spec: SessionSpec) -> Replaced | None:
        """The sandbox ended and forgotten when it no longer fits `spec` or the workspace
        (what ran there, said), or had ended."""
        sandbox, old = self._sandbox, self._spec
        if sandbox is None or old is None:
            return None
        changed: tuple[str, ...] = ()
        if not sandbox.alive:
            why: tuple[str, ...] = ("ended",)
        elif not (why := old.differs(spec)):
            changed = await asyncio.to_thread(sandbox.changes)
            why = ("outgrown",) if changed else ()
        if not why:
            return None
        ended = await sandbox.running() if sandbox.alive else self._known
        self.close(set_aside=False)  # (what changed may be the person's: a `.env`)
        return Replaced(why, ended, changed)

    async def _start(self, plan: ProcessPlan, spec: SessionSpec) -> ShellSandbox:
        assert plan.mounts is not None and plan.limits is not None
        # The workspace looked at again: the sandbox waits for no plan it has outgrown.
        if changed := await asyncio.to_thread(plan.mounts.changes):
            from lily_kernel.prompting.runs import outgrown_reason

            raise ToolError(outgrown_reason(changed))
        sandbox = ShellSandbox(spec.bwrap, plan.cwd, plan.mounts, plan.limits,
                               plan.env, spec.network)
        try:
            await sandbox.start()
        except SessionGoneError as exc:
            from lily_kernel.prompting.sessions import session_not_started

            raise ToolError(session_not_started(str(exc))) from None
        self._sandbox, self._spec, self._known = sandbox, spec, LeftRunning()
        return sandbox

    def end_turn(self) -> tuple[tuple[tuple[int, str], ...], int]:
        """End the sandbox with the turn that used it: what was known to run there
        (processes, count), ended, and what it made that the rules forbid set aside."""
        known = self._known
        self.close()
        return known.processes, known.count

    def close(self, set_aside: bool = True) -> None:
        """End the sandbox and everything in it (the turn or the session ends). What ran
        there after the last command (a daemon writing `.envrc` or `lily.yaml`) made
        that the rules forbid is set aside, once nothing runs there any more."""
        sandbox, known = self._sandbox, self._known
        self._sandbox, self._spec, self._known = None, None, LeftRunning()
        if sandbox is None:
            return
        sandbox.close()
        if set_aside and known:
            with contextlib.suppress(OSError):
                sandbox.mounts.remove_made()

