"""A command planned to run: in bubblewrap where there is one, else through the reaper.

`plan_process` is the one place a command becomes a run (a skill's script, a shell
command line): the sandbox's file system (execution/mounts.py) and namespaces
(execution/sandbox.py), the run's limits (execution/limits.py), the environment without
secrets; or, without a sandbox, the reaper. The tools decide what the command is and
whether it may run unsandboxed at all (the shell may not).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from lily_kernel.errors import ToolError
from lily_kernel.execution.installs import RunEnvironment
from lily_kernel.execution.limits import LIMITER, Limits, limited
from lily_kernel.execution.mounts import MountPlan, plan_mounts
from lily_kernel.execution.runner import ProcessPlan
from lily_kernel.execution.sandbox import Sandbox, sandboxed, script_environment, unsandboxed

__all__ = ["plan_process", "sandbox_mounts"]


def sandbox_mounts(workspace: Path, protected: Sequence[Path], environ: Mapping[str, str],
                   visible: Sequence[Path] = (), writable: Sequence[Path] = (),
                   installs: Path | None = None) -> MountPlan:
    """The sandbox's file system for a run in `workspace` (resolved): Lily's own files
    `protected`, `visible` and what every run needs (the interpreter, the limiter) shown
    read-only through the private home and /tmp, `writable` bound as they are, the
    workspace's environment for packages (`installs`) writable. Raises
    ToolError when the workspace cannot be listed (its protected entries are unknown).
    A sandbox that stays (the Python kernel's) asks the plan before each run whether it
    still holds (`MountPlan.changes(bwrap)`: else it is started again), and after each
    run undoes what the run made that the rules forbid (`MountPlan.remove_made`)."""
    shown = [*visible, Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(),
             Path(sys.executable).resolve().parent.parent, LIMITER.parent.resolve()]
    home = Path(environ["HOME"]).resolve() if environ.get("HOME") else None
    try:
        return plan_mounts(workspace, protected, home, list(dict.fromkeys(shown)),
                           writable=[p.resolve() for p in writable], installs=installs)
    except OSError as exc:  # the workspace's top cannot be listed: nothing is known
        raise ToolError(f"cannot list the workspace ({exc.strerror or exc}): nothing can "
                        "be run there in the sandbox.") from None


def plan_process(command: Sequence[str], workspace: Path, protected: Sequence[Path],
                 environ: Mapping[str, str], sandbox: Sandbox, *, limits: Limits,
                 allowed_env: Sequence[str] = (), visible: Sequence[Path] = (),
                 python: RunEnvironment | None = None) -> ProcessPlan:
    """`command` run in `workspace`: sandboxed when `sandbox` is available (Lily's own
    files `protected`, `visible` shown read-only through the private home and /tmp
    besides the interpreter and the limiter), under `limits`; else through the reaper.
    `python`: the session's Python environment (execution/installs.py): its `bin/`
    first on PATH, its folders shown, its installs writable. Raises ToolError when the
    workspace is the root folder (nothing can be confined)."""
    workspace = workspace.resolve()
    env = script_environment(environ, allowed_env)
    if python is not None:
        env = python.applied(env)
        visible = [*visible, *python.shown]
    if sandbox.bwrap is None:
        return ProcessPlan(argv=tuple(unsandboxed(list(command))), cwd=workspace, env=env,
                           sandboxed=False, sandbox_note=sandbox.reason)
    if workspace == Path(workspace.anchor):
        # Bound writable, the root would show the host's /tmp, /run, /proc and /dev
        # again and leave /usr writable: there is no sandbox to offer.
        from lily_kernel.prompting.runs import root_workspace_reason

        raise ToolError(root_workspace_reason("code"))
    mounts = sandbox_mounts(workspace, protected, environ, visible,
                            installs=python.installs if python is not None else None)
    argv = sandboxed(sandbox.bwrap, limited(command, limits), workspace, mounts,
                     sandbox.way_out)
    if sandbox.way_out is not None:  # the proxy variables (execution/way_out.py)
        env.update(sandbox.way_out.env)
    return ProcessPlan(argv=tuple(argv), cwd=workspace, env=env, sandboxed=True,
                       sandbox_note="", mounts=mounts, limits=limits)
