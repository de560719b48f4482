"""One Jupyter kernel run inside the sandbox, for the session's Python: started with
jupyter_client, spoken to over IPC sockets in a private folder bound into the sandbox.

`Subkernel.execute` sends one execute request and hands each output (as nbformat
writes it) to a callback as it comes; the stop button (a cancellation) and the time
limit interrupt the kernel, by message, and its namespace stays. A kernel that does not
come back from an interrupt is killed: the next run starts a new one. `kill` ends the
sandbox and everything in it at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from queue import Empty
from typing import TYPE_CHECKING, Any, Literal

from lily_kernel.errors import ToolError
from lily_kernel.execution.kernelspec import KernelChoice

if TYPE_CHECKING:
    from jupyter_client.asynchronous.client import AsyncKernelClient
    from jupyter_client.manager import AsyncKernelManager

__all__ = ["OUTPUT_MESSAGES", "RunReply", "Subkernel"]

Status = Literal["ok", "error", "timeout", "interrupted"]
# The iopub messages that are outputs (an update of a display is shown as a new one).
OUTPUT_MESSAGES = ("stream", "display_data", "execute_result", "error", "update_display_data")
# After an interrupt, how long the kernel has to finish the request it was running
# before it is taken for stuck and killed (the namespace is then lost).
SETTLE_SECONDS = 10.0
START_SECONDS = 60.0


@dataclass(frozen=True)
class RunReply:
    """How one execution ended: its status, its outputs as nbformat writes them (kept up
    to the host's cap), the error's name and value, how long it took, and the digest
    and size of everything it output."""

    status: Status
    outputs: tuple[dict[str, Any], ...]
    error: str | None
    duration_ms: float
    output_sha256: str
    output_bytes: int
    dropped: int = 0  # outputs past the cap: counted, not kept or passed on


def _output(msg: dict[str, Any]) -> dict[str, Any]:
    from nbformat.v4 import output_from_msg

    if msg["header"]["msg_type"] == "update_display_data":
        msg = {**msg, "header": {**msg["header"], "msg_type": "display_data"}}
    return dict(output_from_msg(msg))  # type: ignore[no-untyped-call]


class Subkernel:
    """A kernel process in the sandbox and its client. `wrap` turns the kernel's own
    command line into the sandboxed one; `folder` is a private folder (mode 0700) for
    the connection file and the sockets, bound writable into the sandbox."""

    def __init__(self, choice: KernelChoice, wrap: Callable[[list[str]], list[str]],
                 workspace: Path, env: dict[str, str], folder: Path) -> None:
        self.choice = choice
        self._wrap = wrap
        self._workspace = workspace
        self._env = env
        self.folder = folder
        self._manager: AsyncKernelManager | None = None
        self._client: AsyncKernelClient | None = None
        self._settling: asyncio.Future[None] | None = None
        self.started_ms: float | None = None

    @property
    def alive(self) -> bool:
        process = self._process()
        return process is not None and process.poll() is None

    def _process(self) -> Any:
        manager = self._manager
        provisioner = manager.provisioner if manager is not None else None
        return getattr(provisioner, "process", None)

    async def start(self, timeout: float = START_SECONDS) -> None:
        """Start the kernel in the sandbox and wait until it answers."""
        from jupyter_client.kernelspec import KernelSpec
        from jupyter_client.manager import AsyncKernelManager

        wrap = self._wrap

        class Sandboxed(AsyncKernelManager):
            def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
                return wrap(super().format_kernel_cmd(extra_arguments))

        began = time.perf_counter()
        manager = Sandboxed(transport="ipc", ip=str(self.folder / "kernel"),
                            connection_file=str(self.folder / "kernel.json"))
        manager._kernel_spec = KernelSpec(  # the choice, not a kernelspec looked up by name
            argv=list(self.choice.argv), display_name=self.choice.display_name,
            language="python", interrupt_mode="message", env={})
        self._manager = manager
        log = open(self.folder / "kernel.log", "wb")  # noqa: SIM115 - the kernel writes it
        try:
            # Started from the event loop's thread: bubblewrap ends the sandbox when the
            # thread that started it dies (--die-with-parent), so never from a worker.
            await manager.start_kernel(cwd=str(self._workspace), env=dict(self._env),
                                       independent=True, stdout=log, stderr=log)
        except OSError as exc:
            self.kill()
            raise ToolError(f"the Python kernel could not start: {exc.strerror or exc}.") \
                from None
        finally:
            log.close()
        client = manager.client()
        client.start_channels()
        self._client = client
        try:
            await client.wait_for_ready(timeout=timeout)
        except (RuntimeError, TimeoutError) as exc:
            said = self._said()
            self.kill()
            raise ToolError(f"the Python kernel {self.choice.described()} did not start "
                            f"({exc}){': ' + said if said else ''}.") from None
        self.started_ms = round((time.perf_counter() - began) * 1000, 1)

    def _said(self) -> str:
        """The last line the kernel printed (why it failed to start)."""
        try:
            text = (self.folder / "kernel.log").read_text("utf-8", "replace")
        except OSError:
            return ""
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return lines[-1][:300] if lines else ""

    async def execute(self, code: str, on_output: Callable[[dict[str, Any]], None],
                      timeout: float, keep_bytes: int) -> RunReply:
        """Run `code`; each output goes to `on_output` as it comes (kept and passed on up
        to `keep_bytes` of them). Cancelled (the stop button), the kernel is interrupted
        and the cancellation goes on; past `timeout` seconds, it is interrupted and the
        reply says so."""
        if self._settling is not None:
            await self._settling  # the run stopped before: the kernel is idle again
        client = self._client
        if client is None or not self.alive:
            raise ToolError("the Python kernel is not running.")
        began = time.perf_counter()
        digest, total, kept, dropped = hashlib.sha256(), 0, [], 0
        error: str | None = None
        msg_id = client.execute(code, allow_stdin=False, stop_on_error=False)
        deadline = time.monotonic() + timeout
        status: Status = "ok"
        try:
            while True:
                msg = await self._iopub(client, deadline)
                if msg is None:
                    status = "timeout"
                    await self._interrupt(msg_id, wait=True)
                    break
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                kind = msg["header"]["msg_type"]
                if kind == "status" and msg["content"]["execution_state"] == "idle":
                    break
                if kind not in OUTPUT_MESSAGES:
                    continue
                output = _output(msg)
                data = json.dumps(output, sort_keys=True).encode()
                digest.update(data)
                total += len(data)
                if kind == "error":
                    error = f"{output.get('ename', '')}: {output.get('evalue', '')}"
                    status = "error"
                room = keep_bytes - (total - len(data))
                if total <= keep_bytes:
                    kept.append(output)
                    on_output(output)
                else:
                    dropped += 1  # (a stream's head is kept: one huge print says something)
                    if kind == "stream" and room > 0:
                        head = {**output, "text": str(output.get("text", ""))[:room]}
                        kept.append(head)
                        on_output(head)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._interrupt(msg_id, wait=False))
            raise
        return RunReply(status, tuple(kept), error,
                        round((time.perf_counter() - began) * 1000, 1),
                        digest.hexdigest(), total, dropped)

    async def _iopub(self, client: AsyncKernelClient, deadline: float
                     ) -> dict[str, Any] | None:
        """The next iopub message, or None once the deadline has passed. A kernel that
        died meanwhile (it exited, or ran out of memory) is said so."""
        while (left := deadline - time.monotonic()) > 0:
            try:
                return await client.get_iopub_msg(
                    timeout=min(left, 1.0))
            except Empty:
                if not self.alive:
                    said = self._said()
                    self.kill()
                    raise ToolError("the Python kernel ended while it ran the code"
                                    f"{' (' + said + ')' if said else ''}; its variables are "
                                    "gone, the next run starts a new one.") from None
        return None

    async def _interrupt(self, msg_id: str, wait: bool) -> None:
        """Interrupt the kernel; its request `msg_id` must then end. Waited for here
        (`wait`), or by the next run: a kernel that does not end it is killed."""
        manager = self._manager
        if manager is None:
            return
        with contextlib.suppress(Exception):
            await manager.interrupt_kernel()
        self._settling = asyncio.ensure_future(self._settle(msg_id))
        if wait:
            await self._settling

    async def _settle(self, msg_id: str) -> None:
        client = self._client
        try:
            if client is not None:
                await asyncio.wait_for(self._reply(client, msg_id), SETTLE_SECONDS)
        except (TimeoutError, Empty):
            self.kill()  # it did not stop: a new kernel for the next run
        finally:
            self._settling = None

    @staticmethod
    async def _reply(client: AsyncKernelClient, msg_id: str) -> dict[str, Any]:
        while True:
            reply = await client.get_shell_msg()
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply

    async def evaluate(self, expression: str, timeout: float = 10.0) -> str | None:
        """`expression` evaluated quietly in the kernel (nothing shown, nothing kept in
        its history), as its text/plain; None when it failed."""
        client = self._client
        if client is None or not self.alive:
            return None
        if self._settling is not None:
            await self._settling
        msg_id = client.execute("", silent=True, user_expressions={"x": expression})
        try:
            reply = await asyncio.wait_for(self._reply(client, msg_id), timeout)
        except TimeoutError:
            return None
        value = reply["content"].get("user_expressions", {}).get("x", {})
        text = value.get("data", {}).get("text/plain") if value.get("status") == "ok" else None
        return text if isinstance(text, str) else None

    def kill(self) -> None:
        """End the sandbox and everything in it now, and remove the private folder."""
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.stop_channels()
        process = self._process()
        if process is not None:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)  # its own session (launch_kernel)
            with contextlib.suppress(OSError):
                process.kill()
            with contextlib.suppress(Exception):
                process.wait(timeout=5)
        self._client = None
        shutil.rmtree(self.folder, ignore_errors=True)
