"""The session's Python: one sandboxed kernel (execution/subkernel.py), started on first
use, kept across turns and cells, ended with the session.

What the kernel may touch is the sandbox's rules for skill scripts, written once
(execution/mounts.py): the workspace writable, Lily's own files read-only whether or
not they exist, the home folder empty, the network only through the session's proxy
(network/), the environment an allowlist. No
folder of the host's is its to write besides the workspace: its sockets are in the
sandbox's own /tmp, its connection file in a private folder of Lily's shown read-only
(execution/kernel_link.py). Nothing runs outside the sandbox: without a working
bubblewrap, the Python tool says why and runs nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lily_kernel.errors import ToolError, ToolRefusedError
from lily_kernel.execution.cgroups import RunGroup, open_run_group
from lily_kernel.execution.folders import make_private_folder
from lily_kernel.execution.kernelspec import KernelChoice, choose_kernel
from lily_kernel.execution.limits import (
    ReadsSettings,
    RunSettings,
    SettingsSource,
    limited,
)
from lily_kernel.execution.mounts import MountPlan, remove_placeholders
from lily_kernel.execution.plan import sandbox_mounts
from lily_kernel.execution.sandbox import Sandbox, sandboxed, script_environment
from lily_kernel.execution.subkernel import RunReply, Subkernel

if TYPE_CHECKING:
    from lily_kernel.execution.installs import RunEnvironment

__all__ = ["MAX_KEPT_BYTES", "MAX_RUN_BYTES", "PythonHost"]

# What one run shows the person at most (images included); past it, the run goes on
# and the rest is counted, not shown.
MAX_KEPT_BYTES = 5_000_000
# What one run may output at all: past it, the kernel is interrupted (an endless print
# would otherwise keep Lily reading until the time limit). Below the largest message
# Lily takes (kernel_link.MAX_MESSAGE_BYTES): a larger one is past this limit too.
MAX_RUN_BYTES = 64_000_000
# The names the kernel lists (`/python`), as text, at most.
_MAX_NAMES_TEXT = 100_000


def _notice(text: str) -> dict[str, Any]:
    """A line of Lily's among a run's outputs, as the kernel's stderr shows one."""
    return {"output_type": "stream", "name": "stderr", "text": text + "\n"}


@dataclass
class PythonHost(ReadsSettings):
    """How this session runs Python: the host's environment and bubblewrap (the script
    host's, found once), the workspace and Lily's own paths, the kernel to start, the
    settings of a run (its time limit, the variables passed, the resource limits of the
    kernel's processes; a session's are read from its workspace at each use)."""

    environ: Mapping[str, str]
    workspace: Path
    protected: Sequence[Path]
    sandbox: Callable[[], Sandbox]
    kernel_name: str | None = None
    settings: SettingsSource = field(default_factory=lambda: RunSettings(600.0))
    _kernel: Subkernel | None = field(default=None, repr=False)
    _choice: KernelChoice | None = field(default=None, repr=False)
    _mounts: MountPlan | None = field(default=None, repr=False)  # the kernel's sandbox
    _group: RunGroup | None = field(default=None, repr=False)  # the kernel's control group
    _lock: asyncio.Lock | None = field(default=None, repr=False)


    @property
    def running(self) -> Subkernel | None:
        """The kernel, while it runs."""
        kernel = self._kernel
        return kernel if kernel is not None and kernel.alive else None

    def choice(self) -> KernelChoice:
        """The kernel a run uses (looked up once, its environment asked where it is;
        raises ToolError)."""
        if self._choice is None:
            self._choice = choose_kernel(self.kernel_name, self.workspace.resolve(),
                                         self.environ, self.sandbox().bwrap)
        return self._choice

    def python_environment(self) -> RunEnvironment | None:
        """The kernel's environment as runs get it (the kernel, the shell, skill
        scripts), the workspace's installs made; None when it is not known (no sandbox,
        a kernelspec that does not start a Python). Raises ToolError."""
        environment = self.choice().environment
        if environment is None:
            return None
        from lily_kernel.execution.installs import prepare_environment

        return prepare_environment(environment, self.workspace.resolve(), self.environ)

    def check(self) -> KernelChoice:
        """Whether Python can run here at all, before anyone is asked: a sandbox, a
        workspace it can confine, a kernel to start. The kernel it would use."""
        from lily_kernel.prompting.runs import no_sandbox_reason, root_workspace_reason

        box = self.sandbox()
        if box.bwrap is None:
            raise ToolRefusedError(no_sandbox_reason("Python", box.reason))
        workspace = self.workspace.resolve()
        if workspace == Path(workspace.anchor):
            raise ToolError(root_workspace_reason("Python"))
        return self.choice()

    async def run(self, code: str, on_output: Callable[[dict[str, Any]], None]) -> RunReply:
        """Run `code` in the session's kernel, starting it first if it is not running."""
        from lily_kernel.prompting.runs import removed_note, restarted_note

        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            kernel = self.running
            changed = (await asyncio.to_thread(self._mounts.changes, kernel.pid)
                       if kernel is not None and self._mounts is not None else ())
            if changed:  # its mounts no longer protect what the rules protect now
                self.close()
                kernel = None
                on_output(_notice(restarted_note(changed)))
            kernel = kernel or await self._start()
            try:
                return await kernel.execute(code, on_output, self.timeout, MAX_KEPT_BYTES,
                                            MAX_RUN_BYTES)
            finally:
                mounts = self._mounts
                undone = (await asyncio.shield(asyncio.to_thread(mounts.remove_made))
                          if mounts is not None else ())
                if undone:
                    on_output(_notice(removed_note(undone, links=False)))

    async def _start(self) -> Subkernel:
        choice = self.check()
        self.close()  # a kernel that died: its folder and placeholders go first
        box = self.sandbox()
        assert box.bwrap is not None
        bwrap = box.bwrap
        folder = make_private_folder("python")  # the connection file's, read-only inside
        workspace = self.workspace.resolve()
        python = self.python_environment()
        shown = [*python.shown] if python is not None else [choice.installation]
        mounts = self._mounts = sandbox_mounts(
            workspace, self.protected, self.environ, [*shown, folder],
            installs=python.installs if python is not None else None)
        # The kernel and all it starts in one control group where the host allows it:
        # the process and memory limits for them together (a fork bomb from Python meets
        # pids.max, as a shell command's does), and what is left is killed with it.
        group = self._group = open_run_group(self.limits)

        def wrap(argv: list[str]) -> list[str]:
            command = sandboxed(bwrap, limited(argv, self.limits), workspace, mounts,
                                box.way_out)
            return group.argv(command) if group is not None else command

        env = {**script_environment(self.environ, self.allowed_env), **choice.env}
        if python is not None:  # its installs' interpreter, its bin/ first on PATH
            env = python.applied(env)
            if choice.argv[0] == str(python.environment.interpreter):
                choice = replace(choice, argv=(str(python.python), *choice.argv[1:]))
        env = {**env,
               **(box.way_out.env if box.way_out is not None else {})}
        kernel = Subkernel(choice, wrap, workspace, env, folder)
        self._kernel = kernel
        try:
            await kernel.start()
        except BaseException:
            self.close()
            raise
        return kernel

    async def names(self) -> list[str] | None:
        """The names the person's and the model's code defined, or None when no kernel
        runs (or it does not say)."""
        kernel = self.running
        if kernel is None:
            return None
        text = await kernel.evaluate("sorted(get_ipython().run_line_magic('who_ls', ''))")
        if text is None or len(text) > _MAX_NAMES_TEXT:
            return None
        import ast

        try:
            names = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
        return [str(n) for n in names] if isinstance(names, list) else None

    def close(self) -> None:
        """End the kernel (if any) and everything in its sandbox; remove what it left."""
        kernel, self._kernel = self._kernel, None
        if kernel is not None:
            kernel.kill()
        group, self._group = self._group, None
        if group is not None:
            group.close_now()
        mounts, self._mounts = self._mounts, None
        if mounts is not None:  # its placeholders; not what appeared since its last run,
            # which may be the person's (a run's own is set aside after it, in `run`)
            remove_placeholders(mounts.placeholders)
