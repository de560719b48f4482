"""Copying an allowed connection's bytes in a process of the proxy's own, so that the rate
does not depend on who else holds the kernel's GIL (the proxy runs in the kernel's
process, beside its other threads: measured, a busy Python thread there cut a 50 MB
download through an in-process relay to 0.14-0.31x the direct rate, each read waiting
up to Python's switch interval for the GIL; 0.67x with this process: docs/benchmarks.md).

`Splicer` (the proxy's side) starts `python -I -S splicer.py <fd>` at its first copy: the
standard library only, listening on its end of a socket pair. Each copy sends it the
source, the target and one end of a fresh socket pair (SCM_RIGHTS); the process copies
source to target with splice(2) (`splice_all`, which relay.py also uses in-process) on a
thread of its own, half-closes the target, and answers on that pair with the bytes moved
and whether it ended on an error; the proxy's thread waits for that answer without the
GIL. The proxy keeps its own descriptors, so ending a connection there (an error, the
session's end) ends the copy too. The process ends when the proxy closes its end of the
control pair or its process dies; a copy it never answers fails as a connection error.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import signal
import socket
import struct
import sys
import threading
from typing import Any

__all__ = ["PIPE_BYTES", "CopyEndedError", "Splicer", "pipe_limit", "splice_all"]

PIPE_BYTES = 1024 * 1024  # the largest splice pipe asked for
_ANSWER = struct.Struct("=qB")  # bytes moved, 1 if the copy ended on an error


def splice_all(source: int, target: int, moved: Any = None) -> int:
    """Copy `source` to `target` (blocking sockets) until the source's end by splice(2),
    through a pipe: the bytes stay in the kernel, Python runs once per read. The pipe
    starts at Linux's default and grows, up to `pipe_limit()`, while reads fill it (a
    download, not a chat): fewer, larger reads, pipe memory only for the connections
    that move bulk. `moved(n)` is told of each read; the total is returned."""
    out, into = os.pipe()
    total = 0
    try:
        size, limit = fcntl.fcntl(into, fcntl.F_GETPIPE_SZ), pipe_limit()
        while count := os.splice(source, into, size):
            total += count
            if moved is not None:
                moved(count)
            if count * 2 >= size and size < limit:  # (a pipe's slots may fill first)
                with contextlib.suppress(OSError):  # past the user's pipe quota: as it is
                    size = fcntl.fcntl(into, fcntl.F_SETPIPE_SZ, min(size * 4, limit))
            while count:
                count -= os.splice(out, target, count)
    finally:
        os.close(out)
        os.close(into)
    return total


@functools.cache
def pipe_limit() -> int:
    """The largest pipe an unprivileged process may ask for (/proc/sys/fs/pipe-max-size,
    1 MiB by default), at most PIPE_BYTES."""
    try:
        with open("/proc/sys/fs/pipe-max-size") as limit:
            return max(4096, min(PIPE_BYTES, int(limit.read())))
    except (OSError, ValueError):
        return 64 * 1024


class CopyEndedError(ConnectionResetError):
    """The copy in the process ended on an error, after `moved` bytes."""

    def __init__(self, moved: int) -> None:
        super().__init__(f"the copy ended on an error after {moved} bytes")
        self.moved = moved


class Splicer:
    """The proxy's handle on the copying process (started at the first `copy`, ended by
    `close`). `copy` returns None where the process cannot be had (the caller then copies
    in its own process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._control: socket.socket | None = None
        self._process: Any = None
        self._closed = self._failed = False

    def copy(self, source: socket.socket, target: socket.socket) -> int | None:
        """Copy `source` to `target` in the process and half-close the target; the bytes
        moved, or None if the process is not there. OSError if the copy ended on one."""
        control = self._started()
        if control is None:
            return None
        mine, theirs = socket.socketpair()
        with mine:
            try:
                with theirs, self._lock:
                    socket.send_fds(control, [b"c"],
                                    [source.fileno(), target.fileno(), theirs.fileno()])
            except OSError:  # the process went away: this copy and the next ones here
                with self._lock:
                    self._failed = True
                return None
            answer = b""
            while len(answer) < _ANSWER.size and (part := mine.recv(_ANSWER.size)):
                answer += part
        if len(answer) < _ANSWER.size:
            raise ConnectionAbortedError("the copying process ended")
        moved, failed = _ANSWER.unpack(answer)
        if failed:
            raise CopyEndedError(moved)
        return int(moved)

    def close(self) -> None:
        """End the process (its copies under way end with their connections)."""
        with self._lock:
            self._closed = True
            control, self._control = self._control, None
            process, self._process = self._process, None
        if control is not None:
            control.close()
        if process is not None:
            import subprocess

            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def _started(self) -> socket.socket | None:
        with self._lock:
            if self._closed or self._failed:
                return None
            if self._control is None:
                self._control, self._process = _start()
                self._failed = self._control is None
            return self._control


def _start() -> tuple[socket.socket | None, Any]:
    import subprocess

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", __file__, str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/", env={},
            start_new_session=True)  # not in the kernel's group: an interrupt is not its
    except OSError:
        ours.close()
        return None, None
    finally:
        theirs.close()
    return ours, process


def _copy(fds: list[int]) -> None:
    """One copy in the process: source to target, then the answer on the pair."""
    source, target, answer = fds
    moved, failed = 0, 0

    def count(n: int) -> None:
        nonlocal moved
        moved += n

    try:
        splice_all(source, target, count)
        with socket.socket(fileno=os.dup(target)) as sock:
            sock.shutdown(socket.SHUT_WR)
    except OSError:
        failed = 1
    finally:
        os.close(source)
        os.close(target)
        with contextlib.suppress(OSError), socket.socket(fileno=answer) as pair:
            pair.sendall(_ANSWER.pack(moved, failed))


def main(control_fd: int) -> None:
    """Take copies from the proxy until it closes its end."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    control = socket.socket(fileno=control_fd)
    while True:
        try:
            _, fds, _, _ = socket.recv_fds(control, 1, 3)
        except OSError:
            return
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            if not fds:
                return  # the proxy closed its end
            continue
        threading.Thread(target=_copy, args=(fds,), daemon=True).start()


if __name__ == "__main__":
    main(int(sys.argv[1]))
