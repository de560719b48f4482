"""The shell's session sandbox, inside: one process that runs each command it is handed
and keeps what a command left running (a tmux server, a dev server) until the sandbox
ends (with the turn). Run by path with `python -I -S` (the standard library only), inside bubblewrap,
after the bridge and the limiter (execution/shell_session.py starts it):

    python -I -S shell_host.py FD

FD is its end of a Unix socket pair (SOCK_SEQPACKET: one JSON message a packet) whose
other end Lily holds. Lily sends, one command at a time:
- `{"run": {"argv": [...], "env": {...}, "cwd": "..."}}` with the command's stdout and
  stderr (pipe write ends of Lily's) passed as descriptors (SCM_RIGHTS): the command
  starts in a session and process group of its own, stdin empty; answered
  `{"started": PID}` or `{"error": WHY}`, then `{"exit": STATUS}` when it ends (128 +
  the signal when a signal ended it);
- `{"stop": 1}`: every process that appeared since the command started is killed (the
  time limit, the stop button); answered `{"stopped": 1}` (after its `exit`);
- `{"left": 1}`: the processes that appeared since the command started and still run;
  answered `{"left": [[PID, NAME], ...], "count": N}` (the topmost of them, at most
  MAX_LEFT, and how many there are in all); `{"left": "all"}`: those since the sandbox
  started (what ends with it).

It is the child subreaper of the sandbox (`prctl(PR_SET_CHILD_SUBREAPER)`), so what a
command detaches becomes its child and is reaped here. When Lily's end closes (the
session ended, Lily died) it exits, and with it bubblewrap's PID namespace and every
process in it. Pids are the sandbox's own.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import sys

PR_SET_CHILD_SUBREAPER = 36
MAX_MESSAGE = 1 << 20
MAX_LEFT = 20
MAX_NAME = 200


def _pids() -> set[int]:
    return {int(name) for name in os.listdir("/proc") if name.isdigit()}


def _stat(pid: int) -> tuple[str, int] | None:
    """A process's state letter and parent, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return fields[0].decode(), int(fields[1])


def _name(pid: int) -> str:
    """Its command line (else its name), at most MAX_NAME characters."""
    with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            words = cmdline.read(4 * MAX_NAME).split(b"\0")
        text = " ".join(w.decode("utf-8", "replace") for w in words if w)
        if text:
            return text[:MAX_NAME]
    with contextlib.suppress(OSError), open(f"/proc/{pid}/comm", "rb") as comm:
        return comm.read().decode("utf-8", "replace").strip()[:MAX_NAME]
    return "?"


class Host:
    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.me = os.getpid()
        self.initial = _pids()  # Lily's own: the sandbox's init, the bridge, this
        self.before = self.initial  # what ran before the command
        self.main: int | None = None  # the command's first process, until reaped
        self.reported = True  # its exit sent

    def send(self, message: dict[str, object]) -> None:
        self.control.send(json.dumps(message).encode())

    def reap(self) -> None:
        """Reap every child that ended; say the command's end."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.main:
                self.main = None
                code = os.WEXITSTATUS(status) if os.WIFEXITED(status) \
                    else 128 + os.WTERMSIG(status)
                self.reported = True
                self.send({"exit": code})

    def appeared(self, since: set[int] | None = None) -> dict[int, int]:
        """The processes that appeared since the command started (or `since`) and still
        run (not zombies): pid -> parent."""
        found = {}
        for pid in _pids() - (self.before if since is None else since) - {self.me}:
            stat = _stat(pid)
            if stat is not None and stat[0] not in ("Z", "X"):
                found[pid] = stat[1]
        return found

    def run(self, request: dict[str, object], fds: list[int]) -> None:
        self.reap()
        if self.main is not None or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            self.send({"error": "a command is already running"})
            return
        argv = [str(a) for a in request["argv"]]  # type: ignore[attr-defined]
        env = {str(k): str(v) for k, v in request["env"].items()}  # type: ignore[attr-defined]
        cwd = str(request["cwd"])
        self.before = _pids()
        read_end, write_end = os.pipe()  # CLOEXEC: closed by a successful exec
        pid = os.fork()
        if pid == 0:
            _child(argv, env, cwd, fds, write_end)
        os.close(write_end)
        for fd in fds:
            os.close(fd)
        why = os.read(read_end, 4096)
        os.close(read_end)
        if why:
            os.waitpid(pid, 0)
            self.send({"error": why.decode("utf-8", "replace")})
            return
        self.main, self.reported = pid, False
        self.send({"started": pid})

    def stop(self) -> None:
        """Kill everything that appeared since the command started, until none is left."""
        if self.main is not None:
            with contextlib.suppress(OSError):
                os.killpg(self.main, signal.SIGKILL)
        for _ in range(200):
            left = self.appeared()
            if not left:
                break
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            self.reap()
            select.select([], [], [], 0.01)
        if self.main is not None:  # killed: reaped now, its exit said
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.main, 0)
                self.main = None
                self.send({"exit": 128 + signal.SIGKILL})
        self.send({"stopped": 1})

    def left(self, everything: bool) -> None:
        self.reap()
        left = self.appeared(self.initial if everything else None)
        tops = sorted(pid for pid, parent in left.items() if parent not in left)
        self.send({"left": [[pid, _name(pid)] for pid in tops[:MAX_LEFT]],
                   "count": len(left)})

    def serve(self) -> None:
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.send({"ready": self.me})
        while True:
            ready, _, _ = select.select([self.control.fileno(), wake_read], [], [])
            if wake_read in ready:
                os.read(wake_read, 4096)
                self.reap()
            if self.control.fileno() in ready:
                data, fds, _, _ = socket.recv_fds(self.control, MAX_MESSAGE, 4)
                if not data:
                    return  # Lily's end closed: the sandbox ends with this process
                message = json.loads(data)
                if "run" in message:
                    self.run(message["run"], fds)
                elif "stop" in message:
                    self.stop()
                elif "left" in message:
                    self.left(message["left"] == "all")


def _child(argv: list[str], env: dict[str, str], cwd: str, fds: list[int],
           report: int) -> None:
    """In the forked child: its own session, the output pipes, then the command."""
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in (null, *fds):
            if fd > 2:
                os.close(fd)
        for number in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD):
            signal.signal(number, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        os.chdir(cwd)
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        os.write(report, (exc.strerror or str(exc)).encode())
    finally:
        os._exit(127)


def main(argv: list[str]) -> int:
    control = socket.socket(fileno=int(argv[0]))
    os.set_inheritable(control.fileno(), False)
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    Host(control).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
