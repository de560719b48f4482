"""How Lily reaches a kernel inside the sandbox, touching nothing sandboxed code can change:
its connection file, its sockets, the ZeroMQ context they are spoken over, and what the
kernel process prints.

- The **connection file** is written by Lily in a private folder of its own (shown
  read-only in the sandbox) and never read back.
- The kernel binds its **sockets** in the sandbox's own /tmp (a memory file system of
  the sandbox, gone with it: nothing on the host to fill or leave behind), under a name
  no one can guess. Once it has, Lily opens each by its inode through
  `/proc/<pid>/root` (`O_PATH`, never following a link) and connects through
  `/proc/self/fd/<fd>`: a name sandboxed code can neither change nor point elsewhere,
  reconnects included.
- The **context** bounds what the kernel can make Lily hold: a message part of at most
  MAX_MESSAGE_BYTES (a larger one drops the connection instead), one message queued.
- What the kernel process **prints** itself (why it failed to start) comes through a pipe
  of Lily's, the last TAIL_BYTES kept in memory: never a file a link could replace.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import zmq.asyncio

    from lily_kernel.execution.iopub import BoundedClient

__all__ = ["CHANNELS", "MAX_MESSAGE_BYTES", "Connection", "KernelOutput", "KernelSockets",
           "bounded_context", "find_sockets", "sandboxed_client", "write_connection"]

# A message part Lily receives from the kernel at most (an output larger than this drops
# the connection: see execution/iopub.py); and a run's whole output is limited below it.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
TAIL_BYTES = 8192
# The channels, and the port numbers that name their sockets (`<prefix>-<port>`).
CHANNELS = {"shell": 1, "iopub": 2, "stdin": 3, "control": 4, "hb": 5}


@dataclass(frozen=True)
class Connection:
    """A kernel's connection: the file it reads, what it says, and the prefix of its
    sockets' names inside the sandbox."""

    file: Path
    info: dict[str, Any]
    inside: str


def write_connection(folder: Path) -> Connection:
    """A connection file for a new kernel, in `folder` (Lily's, private): IPC sockets in
    the sandbox's /tmp under a random name, a random key."""
    from jupyter_client.connect import write_connection_file

    inside = f"/tmp/lily-kernel-{secrets.token_hex(16)}"
    file, info = write_connection_file(
        str(folder / "kernel.json"), ip=inside, transport="ipc",
        key=secrets.token_hex(32).encode(), shell_port=CHANNELS["shell"],
        iopub_port=CHANNELS["iopub"], stdin_port=CHANNELS["stdin"],
        control_port=CHANNELS["control"], hb_port=CHANNELS["hb"])
    return Connection(Path(file), dict(info), inside)


def bounded_context() -> zmq.asyncio.Context:
    """A ZeroMQ context whose sockets hold little of what the kernel sends: one message
    queued (the kernel's side queues the rest, in the sandbox, or drops it), each part
    at most MAX_MESSAGE_BYTES."""
    import zmq
    import zmq.asyncio

    context = zmq.asyncio.Context()
    context.setsockopt(zmq.RCVHWM, 1)
    context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
    return context


def _children() -> dict[int, list[int]]:
    """Every process's children (from /proc/<pid>/stat)."""
    found: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                with open(f"/proc/{name}/stat", "rb") as status:
                    parent = int(status.read().rsplit(b")", 1)[1].split()[1])
                found.setdefault(parent, []).append(int(name))
    return found


def _inside(pid: int) -> list[int]:
    """The processes started below `pid` (bubblewrap) that live in another mount
    namespace than Lily's: the sandbox's."""
    own = os.readlink("/proc/self/ns/mnt")
    children, found = _children(), []
    todo = list(children.get(pid, ()))
    while todo:
        child = todo.pop(0)
        todo += children.get(child, [])
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{child}/ns/mnt") != own:
                found.append(child)
    return found


@dataclass
class KernelSockets:
    """The kernel's sockets, each held open by inode (`O_PATH`): their addresses for
    ZeroMQ, by channel."""

    fds: dict[str, int]

    def address(self, channel: str) -> str:
        return f"ipc:///proc/self/fd/{self.fds[channel]}"

    def close(self) -> None:
        for fd in self.fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = {}


def _open_sockets(pid: int, inside: str) -> KernelSockets | None:
    """The sockets named `<inside>-<port>` as process `pid` sees them, once all are
    bound: each a socket itself, not a link (opened without following one)."""
    fds: dict[str, int] = {}
    try:
        for channel, port in CHANNELS.items():
            fd = os.open(f"/proc/{pid}/root{inside}-{port}",
                         os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
            fds[channel] = fd
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                raise OSError(f"{inside}-{port} is not a socket")
    except OSError:
        KernelSockets(fds).close()
        return None
    return KernelSockets(fds)


async def find_sockets(pid: int, inside: str, running: Callable[[], bool],
                       deadline: float) -> KernelSockets | None:
    """The kernel's sockets once it has bound them all (it was started as `pid`, the
    sandbox's bubblewrap); None when it ended first or the deadline passed."""
    while running() and time.monotonic() < deadline:
        for process in _inside(pid):
            found = _open_sockets(process, inside)
            if found is not None:
                return found
        await asyncio.sleep(0.05)
    return None


class KernelOutput:
    """What the kernel process writes to its own stdout and stderr (its outputs come as
    messages): a pipe read by a thread of its own, the last TAIL_BYTES kept."""

    def __init__(self) -> None:
        self._read, self.write_end = os.pipe()
        self._tail = b""
        self._thread = threading.Thread(target=self._drain, name="lily-kernel-output",
                                        daemon=True)

    def start(self) -> None:
        """Read from now on (the kernel holds the write end: Lily's is closed)."""
        os.close(self.write_end)
        self._thread.start()

    def discard(self) -> None:
        """Close the pipe of a kernel that did not start."""
        for fd in (self._read, self.write_end):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _drain(self) -> None:
        try:
            while chunk := os.read(self._read, 65536):
                self._tail = (self._tail + chunk)[-TAIL_BYTES:]
        except OSError:
            pass
        finally:
            os.close(self._read)

    def last_line(self, wait: float = 0.0) -> str:
        """The last line it printed (at most 300 characters); `wait`: how long what it
        printed last may take to arrive (once it has ended)."""
        if self._thread.is_alive():
            self._thread.join(wait)
        lines = [line.strip() for line in self._tail.decode("utf-8", "replace").splitlines()]
        lines = [line for line in lines if line]
        return lines[-1][:300] if lines else ""


def sandboxed_client(context: zmq.asyncio.Context, connection: Connection,
                     sockets: KernelSockets) -> BoundedClient:
    """jupyter_client's async client for the kernel (execution/iopub.py), over `context`,
    each channel connected through `sockets` (never through the names in the connection
    file), reconnects included."""
    from lily_kernel.execution.iopub import BoundedClient

    class Sandboxed(BoundedClient):
        def _make_url(self, channel: str) -> str:
            return sockets.address(channel)

    client = Sandboxed(context=context)
    client.load_connection_info(connection.info)  # type: ignore[arg-type]
    return client
