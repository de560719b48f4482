"""The shell's session sandbox, from Lily's side: one bubblewrap that lives as long as the
turn (or until replaced), running execution/shell_host.py, which runs each command handed to it.

`ShellSandbox.start` lays the sandbox as a command's would be laid (the mounts of
execution/mounts.py, the way out of execution/way_out.py with its bridge, the limits of
execution/limits.py, one control group where the host allows it), from the event loop's
thread (bubblewrap's `--die-with-parent` follows that thread), with one end of a Unix
socket pair passed in. `launch` hands the host a command and the write ends of its
output pipes (execution/runner.py's own: its caps and streaming stay); what it returns
is the runner's `Started`: wait for the command, stop it and all it started, and, once
its output is done, ask what it left running. `close` ends the sandbox and everything
in it (the socket's end makes the host exit; bubblewrap's process group and the control
group are killed too).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lily_kernel.execution.limits import Limits, limited
from lily_kernel.execution.mounts import MountPlan, remove_placeholders
from lily_kernel.execution.sandbox import kill_sandbox, sandboxed

if TYPE_CHECKING:
    from lily_kernel.execution.cgroups import RunGroup
    from lily_kernel.execution.way_out import WayOut

__all__ = ["HOST", "LeftRunning", "SessionGoneError", "ShellSandbox"]

HOST = Path(__file__).with_name("shell_host.py")  # shown in every sandbox (plan.py)
START_SECONDS = 120.0  # bubblewrap and the host, on a loaded machine (a run had none)
ANSWER_SECONDS = 60.0  # the host answers each message at once; past this it is stuck
STOP_SECONDS = 30.0  # (a loaded machine)
MAX_MESSAGE = 1 << 20
MAX_LEFT = 20


class SessionGoneError(OSError):
    """The session's sandbox ended or stopped answering."""


@dataclass(frozen=True)
class LeftRunning:
    """What runs in the sandbox besides Lily's own processes: the topmost processes
    (their pid inside the sandbox and command line), and how many there are in all."""

    processes: tuple[tuple[int, str], ...] = ()
    count: int = 0

    def __bool__(self) -> bool:
        return self.count > 0


def _left(message: Mapping[str, Any]) -> LeftRunning:
    try:
        processes = tuple((int(pid), str(name)[:200]) for pid, name in message["left"])
        return LeftRunning(processes[:MAX_LEFT], max(int(message["count"]), len(processes)))
    except (KeyError, TypeError, ValueError):
        raise SessionGoneError("the shell's sandbox gave no list") from None


@dataclass
class ShellSandbox:
    """One session sandbox: `mounts` laid, `limits` applied to everything in it,
    `way_out` its network, `env` its host's environment (each command brings its own)."""

    bwrap: str
    workspace: Path
    mounts: MountPlan
    limits: Limits
    env: Mapping[str, str]
    way_out: WayOut | None = None
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _socket: socket.socket | None = field(default=None, repr=False)
    _group: RunGroup | None = field(default=None, repr=False)
    _reader: asyncio.Task[None] | None = field(default=None, repr=False)
    _answers: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue, repr=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    _exit: asyncio.Future[int] | None = field(default=None, repr=False)
    _gone: bool = field(default=False, repr=False)

    @property
    def alive(self) -> bool:
        return (not self._gone and self._process is not None
                and self._process.poll() is None)

    @property
    def pid(self) -> int | None:
        """bubblewrap's process, while the sandbox runs."""
        return self._process.pid if self.alive and self._process is not None else None

    def changes(self) -> tuple[str, ...]:
        """What its mounts no longer protect (execution/mounts.py `changes`)."""
        return self.mounts.changes(self.pid)

    async def start(self) -> None:
        """Lay the sandbox and wait until its host answers. Raises SessionGoneError."""
        from lily_kernel.execution.cgroups import open_run_group

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        host = [sys.executable, "-I", "-S", str(HOST), str(theirs.fileno())]
        argv = sandboxed(self.bwrap, limited(host, self.limits), self.workspace,
                         self.mounts, self.way_out)
        self._group = open_run_group(self.limits)
        if self._group is not None:
            argv = self._group.argv(argv)
        try:
            # From the event loop's thread: --die-with-parent follows the thread.
            self._process = subprocess.Popen(
                argv, cwd=self.workspace, env=dict(self.env), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=[theirs.fileno()],
                start_new_session=True)
        except OSError as exc:
            ours.close()
            self.close()
            raise SessionGoneError(exc.strerror or str(exc)) from None
        finally:
            theirs.close()
        ours.setblocking(False)
        self._socket = ours
        self._attach()
        try:
            await self._answer("ready", START_SECONDS)
        except SessionGoneError:
            said = self._said()
            self.close()
            raise SessionGoneError(said or "it ended as it started") from None

    def _said(self) -> str:
        """The last line bubblewrap or the host printed, once it ended."""
        process = self._process
        if process is None or process.stderr is None:
            return ""
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            process.wait(timeout=2)
        with contextlib.suppress(OSError):
            os.set_blocking(process.stderr.fileno(), False)
            lines = (process.stderr.read(65536) or b"").decode("utf-8", "replace").splitlines()
            return lines[-1].strip()[:300] if lines else ""
        return ""

    def _attach(self) -> None:
        """Read the host's messages on the running event loop (a session may run its
        turns on one loop after another: each `asyncio.run` of a test, of replay)."""
        loop = asyncio.get_running_loop()
        if self._reader is not None and not self._reader.done() and self._loop is loop:
            return
        if self._reader is not None and not self._reader.done():
            with contextlib.suppress(RuntimeError):  # (its loop closed)
                self._reader.cancel()
        self._loop, self._answers = loop, asyncio.Queue()
        self._reader = loop.create_task(self._read())

    async def _read(self) -> None:
        """Each message of the host's: a command's end to its future, the rest queued."""
        loop = asyncio.get_running_loop()
        assert self._socket is not None
        try:
            while data := await loop.sock_recv(self._socket, MAX_MESSAGE):
                message = json.loads(data)
                if not isinstance(message, dict):
                    break
                if "exit" in message:
                    if self._exit is not None and not self._exit.done():
                        self._exit.set_result(int(message["exit"]))
                else:
                    self._answers.put_nowait(message)
        except (OSError, ValueError, TypeError):
            pass
        self._gone = True
        if self._exit is not None and not self._exit.done():
            self._exit.set_result(128 + signal.SIGKILL)
        self._answers.put_nowait({"gone": True})

    async def _answer(self, kind: str, timeout: float = ANSWER_SECONDS) -> dict[str, Any]:
        """The host's next answer, of `kind`; SessionGoneError when none comes."""
        try:  # (not wait_for: on 3.11 it loses a cancellation that meets the answer)
            async with asyncio.timeout(timeout):
                answer = await self._answers.get()
        except TimeoutError:
            self._gone = True  # (stopped, or stuck): replaced before the next command
            raise SessionGoneError("the shell's sandbox does not answer") from None
        if kind not in answer and not (kind == "started" and "error" in answer):
            raise SessionGoneError("the shell's sandbox ended")
        return answer

    def _send(self, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
        if self._socket is None or self._gone:
            raise SessionGoneError("the shell's sandbox ended")
        self._attach()
        try:
            socket.send_fds(self._socket, [json.dumps(message).encode()], list(fds))
        except OSError:
            raise SessionGoneError("the shell's sandbox ended") from None

    async def launch(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path,
                     stdout: int, stderr: int) -> SessionRun:
        """Start `argv` in the sandbox, its output to the pipes' write ends given.
        Raises OSError (it cannot start: its reason) or SessionGoneError."""
        self._exit = asyncio.get_running_loop().create_future()
        self._send({"run": {"argv": list(argv), "env": dict(env), "cwd": str(cwd)}},
                   [stdout, stderr])
        try:
            answer = await self._answer("started")
        except asyncio.CancelledError:  # the stop button, before the start was heard
            await asyncio.shield(self._stop_unheard())
            raise
        if "error" in answer:
            raise OSError(str(answer["error"])[:300])
        return SessionRun(self, self._exit)

    async def _stop_unheard(self) -> None:
        """A command sent whose start was not heard: stopped once it has started; the
        sandbox ended when it does not answer."""
        try:
            if "started" in await self._answer("started", STOP_SECONDS):
                self._send({"stop": 1})
                await self._answer("stopped", STOP_SECONDS)
        except SessionGoneError:
            self.close()

    async def running(self) -> LeftRunning:
        """Everything that runs in the sandbox besides Lily's own (nothing when it does
        not answer)."""
        if not self.alive:
            return LeftRunning()
        try:
            self._send({"left": "all"})
            return _left(await self._answer("left"))
        except SessionGoneError:
            return LeftRunning()

    def close(self) -> None:
        """End the sandbox and everything in it; remove its placeholders."""
        if self._reader is not None:
            with contextlib.suppress(RuntimeError):  # (its loop closed)
                self._reader.cancel()
            self._reader = None
        sock, self._socket = self._socket, None
        if sock is not None:
            sock.close()  # the host exits, and the sandbox with it
        self._gone = True
        process = self._process
        if process is not None:
            kill_sandbox(process)
            if process.stderr is not None:
                process.stderr.close()
        group, self._group = self._group, None
        if group is not None:
            group.close_now()  # whatever is left in it
        remove_placeholders(self.mounts.placeholders)


@dataclass
class SessionRun:
    """One command in the session's sandbox, as the runner drives it (`Started`)."""

    sandbox: ShellSandbox
    exit: asyncio.Future[int]
    left: LeftRunning = field(default_factory=LeftRunning)

    async def wait(self) -> int:
        return await asyncio.shield(self.exit)

    async def stop(self) -> None:
        """End the command and everything it started (the time limit, the stop
        button); a sandbox that does not do it is ended whole."""
        try:
            self.sandbox._send({"stop": 1})
            await self.sandbox._answer("stopped", STOP_SECONDS)
        except SessionGoneError:
            self.sandbox.close()

    def ended(self) -> None:
        """Nothing: what it left in the background lives on (its pipes' holders are
        ended by the runner)."""

    async def close(self) -> None:
        """Once its output is done: what it left running."""
        if not self.sandbox.alive:
            return
        try:
            self.sandbox._send({"left": 1})
            self.left = _left(await self.sandbox._answer("left"))
        except SessionGoneError:
            self.sandbox.close()
