"""One Jupyter kernel run inside the sandbox, for the session's Python: started by Lily,
spoken to with jupyter_client's async client over IPC sockets inside the sandbox
(execution/kernel_link.py), its outputs read within bounds (execution/iopub.py,
execution/run_outputs.py).

`Subkernel.execute` sends one execute request and hands each output (as nbformat writes
it) to a callback as it comes, until the kernel is idle again. Three things end a run
early, each by interrupting the kernel (by message), whose namespace stays: the stop
button (a cancellation), the time limit, and an output past the run's limit (whatever the
kernel still queued is then dropped). A kernel that does not come back from an interrupt
within SETTLE_SECONDS is killed: its variables are gone, the reply says so, and the next
run starts a new one. `kill` ends the sandbox and everything in it at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lily_kernel.errors import ToolError
from lily_kernel.execution.iopub import Iopub, IopubLostError
from lily_kernel.execution.kernel_link import (
    KernelOutput,
    KernelSockets,
    bounded_context,
    find_sockets,
    sandboxed_client,
    write_connection,
)
from lily_kernel.execution.kernelspec import KernelChoice
from lily_kernel.execution.run_outputs import OUTPUT_MESSAGES, RunOutputs

if TYPE_CHECKING:
    import zmq.asyncio
    from jupyter_client.asynchronous.client import AsyncKernelClient

__all__ = ["OUTPUT_MESSAGES", "RunReply", "Subkernel"]

Status = Literal["ok", "error", "timeout", "interrupted", "output_limit"]
# After an interrupt, how long the kernel has to finish the request it was running
# before it is taken for stuck and killed (the namespace is then lost).
SETTLE_SECONDS = 10.0
START_SECONDS = 60.0
# Once the kernel has answered a request, how long its idle status may still take: one
# the kernel dropped (it queued more output than Lily read) must not hold the run.
QUIET_SECONDS = 2.0
# Run quietly once the kernel answers. It starts with Python's safe path (kernelspec.py),
# so no module of the workspace runs as it starts or shadows one it imports later (a
# traceback's `stack_data`); the workspace then comes last on sys.path, so its own
# modules import as in a notebook (`import helpers`) but never in place of another.
_WORKSPACE_LAST = "import os as _o, sys as _s\n_s.path.append(_o.getcwd())\ndel _o, _s"
Reply = asyncio.Future[dict[str, Any]]


@dataclass(frozen=True)
class RunReply:
    """How one execution ended: its status, its outputs as nbformat writes them (kept up
    to the host's cap), the error's name and value, how long it took, the digest of what
    was kept and the size of everything it output; whether the kernel was ended (it did
    not stop when interrupted: its variables are gone); the limits it ran under. Facts
    only: prompting/runs.py words them for the model."""

    status: Status
    outputs: tuple[dict[str, Any], ...]
    error: str | None
    duration_ms: float
    output_sha256: str
    output_bytes: int
    dropped: int = 0  # outputs past the cap: counted, not kept or passed on
    kernel_ended: bool = False
    timeout: float = 0.0  # the time limit it ran under, in seconds
    limit_bytes: int = 0  # the output it was allowed at most (past it: `output_limit`)


class Subkernel:
    """A kernel process in the sandbox and its client. `wrap` turns the kernel's own
    command line into the sandboxed one; `folder` is a private folder (mode 0700) of
    Lily's for the connection file, shown read-only in the sandbox, removed once the
    kernel has read it."""

    def __init__(self, choice: KernelChoice, wrap: Callable[[list[str]], list[str]],
                 workspace: Path, env: dict[str, str], folder: Path) -> None:
        self.choice = choice
        self._wrap = wrap
        self._workspace = workspace
        self._env = env
        self.folder = folder
        self._process: subprocess.Popen[bytes] | None = None
        self._output: KernelOutput | None = None
        self._sockets: KernelSockets | None = None
        self._context: zmq.asyncio.Context | None = None
        self._client: AsyncKernelClient | None = None
        self._iopub: Iopub | None = None
        self._replies: dict[str, Reply] = {}  # shell replies awaited, by request
        self._reader: asyncio.Task[None] | None = None
        self._settling: asyncio.Future[None] | None = None
        self.started_ms: float | None = None

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        """The process Lily started (bubblewrap), while it runs."""
        return self._process.pid if self.alive and self._process is not None else None

    async def start(self, timeout: float = START_SECONDS) -> None:
        """Start the kernel in the sandbox and wait until it answers."""
        began, deadline = time.perf_counter(), time.monotonic() + timeout
        connection = write_connection(self.folder)
        output = self._output = KernelOutput()
        try:
            # Started from the event loop's thread: bubblewrap ends the sandbox when the
            # thread that started it dies (--die-with-parent), so never from a worker.
            self._process = subprocess.Popen(
                self._wrap(self.choice.command(str(connection.file))), cwd=self._workspace,
                env=self._env, stdin=subprocess.DEVNULL, stdout=output.write_end,
                stderr=output.write_end, start_new_session=True)
        except OSError as exc:
            output.discard()
            self.kill()
            raise ToolError(f"the Python kernel could not start: {exc.strerror or exc}.") \
                from None
        output.start()
        sockets = await find_sockets(self._process.pid, connection.inside,
                                     lambda: self.alive, deadline)
        if sockets is None:
            raise self._failed("it ended" if not self.alive else f"no answer in {timeout:g} s")
        self._sockets, self._context = sockets, bounded_context()
        client = self._client = sandboxed_client(self._context, connection, sockets)
        client.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=True)
        self._reader = asyncio.ensure_future(self._read_replies(client))
        self._iopub = Iopub(client)
        if not await self._handshake(deadline):
            raise self._failed(f"no answer in {timeout:g} s")
        await self._quietly(_WORKSPACE_LAST)
        shutil.rmtree(self.folder, ignore_errors=True)  # the kernel has read it
        self.started_ms = round((time.perf_counter() - began) * 1000, 1)

    def _failed(self, why: str) -> ToolError:
        self.kill()
        said = self._said()
        return ToolError(f"the Python kernel {self.choice.described()} did not start "
                         f"({why}){': ' + said if said else ''}.")

    def _said(self) -> str:
        """The last line the kernel process printed (why it failed), once it has ended."""
        return self._output.last_line(wait=1.0) if self._output is not None else ""

    async def _read_replies(self, client: AsyncKernelClient) -> None:
        """Hand each shell reply to whoever awaits it (one reader for every request)."""
        while True:
            try:
                reply = await client.get_shell_msg()
            except ValueError:  # not the protocol's (a bad signature): skipped
                continue
            waiting = self._replies.pop(reply["parent_header"].get("msg_id"), None)
            if waiting is not None and not waiting.done():
                waiting.set_result(reply)

    def _reply(self, msg_id: str) -> Reply:
        """The reply to request `msg_id`, once it comes (asked right after sending it)."""
        return self._replies.setdefault(msg_id, asyncio.get_running_loop().create_future())

    async def _handshake(self, deadline: float) -> bool:
        """Whether the kernel answers and its iopub messages reach Lily's socket (a new
        subscription takes a moment to hold): a kernel_info request, its reply, then its
        status on iopub; asked again until `deadline`."""
        client, iopub = self._client, self._iopub
        while client is not None and iopub is not None and self.alive \
                and time.monotonic() < deadline:
            msg_id = client.kernel_info()
            done, _ = await asyncio.wait({self._reply(msg_id)}, timeout=1.0)
            if not done:
                self._replies.pop(msg_id, None)
                continue
            with contextlib.suppress(IopubLostError):
                while (message := await iopub.next(1.0)) is not None:
                    if message.parent_id == msg_id:
                        return True
        return False

    async def execute(self, code: str, on_output: Callable[[dict[str, Any]], None],
                      timeout: float, keep_bytes: int, limit_bytes: int) -> RunReply:
        """Run `code`; each output goes to `on_output` as it comes (kept and passed on up
        to `keep_bytes` of them). Cancelled (the stop button), the kernel is interrupted
        and the cancellation goes on; past `timeout` seconds or `limit_bytes` of output,
        it is interrupted and the reply says so."""
        if self._settling is not None:
            await self._settling  # the run stopped before: the kernel is idle again
        client = self._client
        if client is None or self._iopub is None or not self.alive:
            raise ToolError("the Python kernel is not running.")
        began = time.perf_counter()
        outputs = RunOutputs(keep_bytes, on_output)
        msg_id = client.execute(code, allow_stdin=False, stop_on_error=False)
        replied = self._reply(msg_id)
        try:
            status = await self._collect(client, msg_id, outputs,
                                         time.monotonic() + timeout, limit_bytes)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._interrupt(replied, wait=False))
            raise
        error = outputs.error
        if status == "ok":
            await asyncio.wait({replied}, timeout=1.0)  # it comes before the idle status
            content = replied.result()["content"] if replied.done() else {}
            if error is None and content.get("status") == "error":
                error = f"{content.get('ename', '')}: {content.get('evalue', '')}"
            status = "error" if error is not None else "ok"
        ended = not self.alive
        return RunReply(status, tuple(outputs.kept), error,
                        round((time.perf_counter() - began) * 1000, 1), outputs.sha256,
                        outputs.total, outputs.dropped, ended,
                        timeout, limit_bytes)

    async def _collect(self, client: AsyncKernelClient, msg_id: str, outputs: RunOutputs,
                       deadline: float, limit_bytes: int) -> Status:
        """Read the run's outputs until its idle status (or its reply, when that status
        was dropped); how it ended."""
        assert self._iopub is not None
        replied = self._reply(msg_id)
        heard = time.monotonic()  # when the run's last message came
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = await self._iopub.next(min(left, 1.0))
            except IopubLostError:
                if await self._ending():
                    raise self._died() from None
                # One output larger than a message may be: past the run's limit.
                outputs.dropped += 1
                outputs.total = max(outputs.total, limit_bytes) + 1
                return await self._stop(replied, "output_limit")
            now = time.monotonic()
            if message is None or message.parent_id != msg_id:
                if not self.alive:
                    raise self._died()
                if replied.done() and now - heard > QUIET_SECONDS:
                    return "ok"  # its idle status was dropped: the reply says it ended
                continue
            heard = now
            if message.kind == "status" and message.state() == "idle":
                return "ok"
            if message.kind in OUTPUT_MESSAGES:
                outputs.add(message, client)
                if outputs.total > limit_bytes:
                    return await self._stop(replied, "output_limit")
        return await self._stop(replied, "timeout")

    async def _ending(self) -> bool:
        """Whether the kernel ends within a second (its sockets closed as it ended)."""
        for _ in range(20):
            if not self.alive:
                return True
            await asyncio.sleep(0.05)
        return False

    def _died(self) -> ToolError:
        self.kill()
        said = self._said()
        return ToolError("the Python kernel ended while it ran the code"
                         f"{' (' + said + ')' if said else ''}; its variables are gone, the "
                         "next run starts a new one.")

    async def _stop(self, replied: Reply, status: Status) -> Status:
        """End the run early: interrupt the kernel and wait until it has stopped (or was
        killed). Past the output limit, whatever the kernel still queued is dropped (a new
        iopub socket; the old one may also have lost its connection)."""
        await self._interrupt(replied, wait=True)
        iopub = self._iopub
        if status == "output_limit" and iopub is not None and self.alive:
            iopub.reset()
            if not await self._handshake(time.monotonic() + SETTLE_SECONDS):
                self.kill()
        return status

    async def _interrupt(self, replied: Reply, wait: bool) -> None:
        """Interrupt the kernel (by message, on its control channel); the request it runs
        must then end (`replied`). Waited for here (`wait`), or by the next run: a kernel
        that does not end it is killed."""
        client = self._client
        if client is None:
            return
        with contextlib.suppress(Exception):
            client.control_channel.send(client.session.msg("interrupt_request", content={}))
        self._settling = asyncio.ensure_future(self._settle(replied))
        if wait:
            await self._settling

    async def _settle(self, replied: Reply) -> None:
        try:
            done, _ = await asyncio.wait({replied}, timeout=SETTLE_SECONDS)
            if not done:
                self.kill()  # it did not stop: a new kernel for the next run
        finally:
            self._settling = None

    async def _quietly(self, code: str, expressions: dict[str, str] | None = None,
                       timeout: float = 10.0) -> dict[str, Any]:
        """Run `code` of Lily's in the kernel, then evaluate `expressions`, with nothing
        shown and nothing kept in its history; its reply's content ({} when none came)."""
        client = self._client
        if client is None or not self.alive:
            return {}
        if self._settling is not None:
            await self._settling
        msg_id = client.execute(code, silent=True, store_history=False,
                                user_expressions=expressions or {})
        done, _ = await asyncio.wait({self._reply(msg_id)}, timeout=timeout)
        if not done:
            self._replies.pop(msg_id, None)
            return {}
        content: dict[str, Any] = done.pop().result()["content"]
        return content

    async def evaluate(self, expression: str, timeout: float = 10.0) -> str | None:
        """`expression` evaluated quietly in the kernel, as its text/plain; None when it
        failed."""
        content = await self._quietly("", {"x": expression}, timeout)
        value = content.get("user_expressions", {}).get("x", {})
        text = value.get("data", {}).get("text/plain") if value.get("status") == "ok" else None
        return text if isinstance(text, str) else None

    def kill(self) -> None:
        """End the sandbox and everything in it now, and remove the private folder."""
        if self._reader is not None:
            self._reader.cancel()
        if self._iopub is not None:
            self._iopub.close()
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.stop_channels()
        process = self._process
        if process is not None:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)  # its own session
            with contextlib.suppress(OSError):
                process.kill()
            with contextlib.suppress(Exception):
                process.wait(timeout=5)
        self._client, self._iopub, self._reader = None, None, None
        if self._sockets is not None:
            self._sockets.close()
        if self._context is not None:
            self._context.destroy(linger=0)
            self._context = None
        shutil.rmtree(self.folder, ignore_errors=True)
