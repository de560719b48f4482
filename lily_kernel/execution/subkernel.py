"""One Jupyter kernel run inside the sandbox, for the session's Python: started by Lily,
driven by jupyter_client's async client (`wait_for_ready`, `execute_interactive`) over
IPC sockets inside the sandbox (execution/kernel_link.py), its channels read within
bounds (execution/iopub.py, execution/run_outputs.py).

`Subkernel.execute` runs one execute request through `execute_interactive`, whose output
hook hands each output (as nbformat writes it) to a callback as it comes, until the
kernel is idle again. Around that loop, what it does not do:
- three things end a run early, each by interrupting the kernel (by message), whose
  namespace stays: the stop button (a cancellation), the time limit (the loop's
  TimeoutError), and an output past the run's limit (the hook raises); whatever the
  stopped run still queued is dropped with its iopub channel;
- settle or kill: a kernel that does not come back from an interrupt within
  SETTLE_SECONDS is killed: its variables are gone, the reply says so, and the next run
  starts a new one;
- a watch beside the loop (`_watch`) for what it cannot see: the kernel's process ended,
  the iopub connection ZeroMQ dropped (a part past the largest message Lily takes), the
  run's idle status the kernel dropped (it queued more output than Lily read).
`kill` ends the sandbox and everything in it at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lily_kernel.errors import ToolError
from lily_kernel.execution.kernel_link import (
    KernelOutput,
    KernelSockets,
    bounded_context,
    find_sockets,
    sandboxed_client,
    write_connection,
)
from lily_kernel.execution.kernelspec import KernelChoice
from lily_kernel.execution.run_outputs import OUTPUT_MESSAGES, RunOutputs, RunReply, Status
from lily_kernel.execution.sandbox import kill_sandbox

if TYPE_CHECKING:
    import zmq.asyncio

    from lily_kernel.execution.iopub import BoundedClient

__all__ = ["OUTPUT_MESSAGES", "RunReply", "Subkernel"]

# After an interrupt, how long the kernel has to finish the request it was running
# before it is taken for stuck and killed (the namespace is then lost).
SETTLE_SECONDS = 10.0
START_SECONDS = 60.0
# Once the kernel has answered a request, how long its idle status may still take: one
# the kernel dropped (it queued more output than Lily read) must not hold the run.
QUIET_SECONDS = 2.0
# How often the watch beside jupyter_client's loop looks at the process and the replies.
WATCH_SECONDS = 0.5
# Run quietly once the kernel answers. It starts with Python's safe path (kernelspec.py),
# so no module of the workspace runs as it starts or shadows one it imports later (a
# traceback's `stack_data`); the workspace then comes last on sys.path, so its own
# modules import as in a notebook (`import helpers`) but never in place of another.
_WORKSPACE_LAST = "import os as _o, sys as _s\n_s.path.append(_o.getcwd())\ndel _o, _s"
Reply = dict[str, Any]


class _OutputLimitError(Exception):
    """Raised by the output hook once a run's output passed its limit: it ends
    jupyter_client's loop, which has no limit of its own."""


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
        self._client: BoundedClient | None = None
        # One request at a time: jupyter_client's loops each read the shell channel for
        # their own reply and drop the others'.
        self._requests = asyncio.Lock()
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
        client.start_channels(shell=True, iopub=True, stdin=False, hb=False, control=True)
        if not await self._ready(deadline - time.monotonic()):
            raise self._failed("it ended" if not self.alive else f"no answer in {timeout:g} s")
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

    async def _ready(self, timeout: float) -> bool:
        """Whether the kernel answers and its iopub messages reach Lily's socket (a new
        subscription takes a moment to hold): a kernel_info request, its reply, then its
        status on iopub; asked again within `timeout`. (jupyter_client's `wait_for_ready`
        does this but then reads iopub until 0.2 s pass in silence, a third of the
        kernel's start, and sees a kernel's end only through a manager or heartbeat.)"""
        deadline = time.monotonic() + timeout
        while (client := self._client) is not None and self.alive \
                and time.monotonic() < deadline:
            msg_id = client.kernel_info()
            if await self._reply(msg_id, 1.0) is None:
                continue
            with contextlib.suppress(queue.Empty):
                while time.monotonic() < deadline:  # (a flood of others' is no answer)
                    message = await client.iopub_channel.get_msg(timeout=1.0)
                    if message["parent_header"].get("msg_id") == msg_id:
                        return True
        return False

    async def _reply(self, msg_id: str, timeout: float) -> Reply | None:
        """The reply to request `msg_id` within `timeout` seconds, or None (replies to
        requests given up on before are dropped)."""
        deadline = time.monotonic() + timeout
        while (client := self._client) is not None:
            try:
                reply: Reply = await client.get_shell_msg(
                    timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                return None
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply
            if time.monotonic() >= deadline + 1.0:  # others' queued replies read away for
                return None  # a second at most (a flood of them is no answer)
        return None

    async def _settled(self) -> BoundedClient | None:
        """The client once the run stopped before has ended (None: no kernel runs)."""
        if self._settling is not None:
            await asyncio.shield(self._settling)  # (a second stop leaves it settling)
        return self._client if self.alive else None

    async def execute(self, code: str, on_output: Callable[[dict[str, Any]], None],
                      timeout: float, keep_bytes: int, limit_bytes: int) -> RunReply:
        """Run `code`; each output goes to `on_output` as it comes (kept and passed on up
        to `keep_bytes` of them). Cancelled (the stop button), the kernel is interrupted
        and the cancellation goes on; past `timeout` seconds or `limit_bytes` of output,
        it is interrupted and the reply says so."""
        async with self._requests:
            client = await self._settled()
            if client is None:
                raise ToolError("the Python kernel is not running.")
            from lily_kernel.execution.iopub import frames_of

            began = time.perf_counter()
            outputs = RunOutputs(keep_bytes, on_output)
            def hook(msg: dict[str, Any]) -> None:
                """Each iopub message of the run (jupyter_client's loop picks them)."""
                message = frames_of(msg)
                if message is not None and message.kind in OUTPUT_MESSAGES:
                    outputs.add(message, client)
                    if outputs.total > limit_bytes:
                        raise _OutputLimitError

            shell = client.shell_channel
            loop = asyncio.ensure_future(client.execute_interactive(
                code, allow_stdin=False, stop_on_error=False, timeout=timeout,
                output_hook=hook))
            try:
                ended, reply = await self._watch(loop, time.monotonic(), timeout)
            except asyncio.CancelledError:
                loop.cancel()
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._interrupt(shell.sent, wait=False))
                raise
            status = await self._ended(ended, shell.sent, outputs, limit_bytes)
        error = outputs.error
        if status == "ok":
            content = reply["content"] if reply is not None else {}
            if error is None and content.get("status") == "error":
                error = f"{content.get('ename', '')}: {content.get('evalue', '')}"
            status = "error" if error is not None else "ok"
        gone = not self.alive
        return RunReply(status, tuple(outputs.kept), error,
                        round((time.perf_counter() - began) * 1000, 1), outputs.sha256,
                        outputs.total, outputs.dropped, gone, timeout, limit_bytes)

    async def _watch(self, loop: asyncio.Future[Reply], since: float, timeout: float
                     ) -> tuple[str, Reply | None]:
        """Await jupyter_client's loop (cancelled if it did not end), watching what it
        cannot see; how it ended ("replied", "timeout", "output_limit", "lost": the iopub
        connection dropped, "died": the process ended) and the reply. The time limit is
        kept here too: the loop raises its TimeoutError only after a poll in silence,
        never while the kernel keeps iopub busy with messages that are no output."""
        assert self._client is not None
        shell, iopub = self._client.shell_channel, self._client.iopub_channel
        lost = asyncio.ensure_future(iopub.disconnected())
        try:
            while True:
                await asyncio.wait({loop, lost}, timeout=WATCH_SECONDS,
                                   return_when=asyncio.FIRST_COMPLETED)
                if loop.done():
                    try:
                        return "replied", loop.result()
                    except TimeoutError:
                        return "timeout", None
                    except _OutputLimitError:
                        return "output_limit", None
                if lost.done():
                    return "lost", None
                if not self.alive:
                    return "died", None
                if time.monotonic() - since > timeout + WATCH_SECONDS:
                    return "timeout", None
                quiet = time.monotonic() - max(since, iopub.received)
                if quiet > QUIET_SECONDS and await shell.msg_ready():
                    # Its reply may be waiting while its idle status was dropped (or a
                    # reply to a request given up on before: dropped, the watch goes on).
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(1.0):
                            reply = await self._reply(shell.sent, 0.0)
                        if reply is not None:
                            return "replied", reply
        finally:
            lost.cancel()
            loop.cancel()

    async def _ended(self, ended: str, msg_id: str, outputs: RunOutputs,
                     limit_bytes: int) -> Status:
        """The run's status once jupyter_client's loop ended as `ended`; a run stopped
        early is interrupted here and waited for (or its kernel killed)."""
        if ended == "replied":
            return "ok"
        if ended == "lost":
            if await self._ending():
                ended = "died"
            else:  # one output larger than a message may be: past the run's limit
                outputs.dropped += 1
                outputs.total = max(outputs.total, limit_bytes) + 1
                ended = "output_limit"
        if ended == "died":
            raise self._died()
        await self._interrupt(msg_id, wait=True)
        return "timeout" if ended == "timeout" else "output_limit"

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

    async def _interrupt(self, msg_id: str | None, wait: bool) -> None:
        """Interrupt the kernel (by message, on its control channel); request `msg_id`
        must then end. Waited for here (`wait`), or by the next request: a kernel that
        does not end it is killed."""
        client = self._client
        if client is None or msg_id is None:
            return
        with contextlib.suppress(Exception):
            client.control_channel.send(client.session.msg("interrupt_request", content={}))
        settling = self._settling = asyncio.ensure_future(self._settle(msg_id))
        if wait:
            await asyncio.shield(settling)

    async def _settle(self, msg_id: str) -> None:
        try:
            if await self._reply(msg_id, SETTLE_SECONDS) is None:
                self.kill()  # it did not stop: a new kernel for the next run
            elif (client := self._client) is not None:
                # What the stopped run still queued is dropped with the old channel (which
                # may also have lost its connection); a new one must hear the kernel.
                client.reset_iopub()
                if not await self._ready(SETTLE_SECONDS):
                    self.kill()
        finally:
            self._settling = None

    async def _quietly(self, code: str, expressions: dict[str, str] | None = None,
                       timeout: float = 10.0) -> dict[str, Any]:
        """Run `code` of Lily's in the kernel, then evaluate `expressions`, with nothing
        shown and nothing kept in its history; its reply's content ({} when none came)."""
        async with self._requests:
            client = await self._settled()
            if client is None:
                return {}
            try:
                # (jupyter_client's reply loop reads on past its timeout while others'
                # replies keep coming: bounded here too)
                async with asyncio.timeout(timeout + 1.0):
                    reply: Reply = await client.execute(
                        code, silent=True, store_history=False,
                        user_expressions=expressions or {}, reply=True, timeout=timeout)
            except TimeoutError:
                return {}
            content: dict[str, Any] = reply["content"]
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
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.stop_channels()  # the iopub channel's monitor too
        process = self._process
        if process is not None:
            kill_sandbox(process)
        self._client = None
        if self._sockets is not None:
            self._sockets.close()
        if self._context is not None:
            self._context.destroy(linger=0)
            self._context = None
        shutil.rmtree(self.folder, ignore_errors=True)
