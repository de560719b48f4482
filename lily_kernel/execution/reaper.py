"""Run a command; when it ends, or on SIGTERM, kill every process it left behind.

Skill scripts run without bubblewrap start through this (execution/sandbox.py's
`unsandboxed`): Linux's child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`) makes every
process the script detaches (`setsid`, a double fork, its output closed) a child of
this one instead of init's, so none outlives the run. In bubblewrap, the sandbox's own
PID namespace does this. Run by path with `python -I -S`: the standard library only.

    python -I -S reaper.py [--die-with PID] [--pid-file PATH] COMMAND [ARG...]

`--die-with PID`: a long-lived child (an MCP server over stdio) must end with the Lily
kernel however it ends, `kill -9` included: Linux sends this process SIGTERM when the
thread that started it dies (`PR_SET_PDEATHSIG`), and it ends the server and whatever
the server started. `--pid-file`: where it writes its pid (its process group's), so the
kernel can end it without waiting on the SDK that started it.

Exits with the command's exit status (128 + the signal when a signal ended it), 127
when it cannot be started (said on stderr), 143 after a SIGTERM.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def children(me: int) -> list[int]:
    """The processes whose parent is `me` (from /proc/<pid>/stat)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError):
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            if int(fields[1]) == me:
                found.append(int(name))
    return found


def end_all() -> None:
    """Kill every child, and those that become ours as their parents die, until none is
    left."""
    me = os.getpid()
    while True:
        for pid in children(me):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _options(argv: list[str]) -> tuple[int | None, str | None, list[str]]:
    """`--die-with PID`, `--pid-file PATH`, and the command after them."""
    parent = pid_file = None
    while argv[:1] in (["--die-with"], ["--pid-file"]) and len(argv) > 1:
        if argv[0] == "--die-with":
            parent = int(argv[1])
        else:
            pid_file = argv[1]
        argv = argv[2:]
    return parent, pid_file, argv


def main(argv: list[str]) -> int:
    parent, pid_file, argv = _options(argv)
    if not argv:
        print("reaper: no command given", file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    if pid_file is not None:
        with open(pid_file, "w") as out:
            out.write(str(os.getpid()))
    if parent is not None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # it died before the signal was asked for
            return 143
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        os.execvp(argv[0], argv)  # no subreaper here: the command alone, as before
    def stop(*_: object) -> None:
        end_all()
        os._exit(143)

    signal.signal(signal.SIGTERM, stop)
    script = os.fork()
    if script == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            print(f"cannot start {argv[0]}: {exc.strerror}", file=sys.stderr)
        os._exit(127)
    while True:  # reap whatever ends, until the script itself does
        pid, code = os.waitpid(-1, 0)
        if pid == script:
            break
    end_all()
    return os.WEXITSTATUS(code) if os.WIFEXITED(code) else 128 + os.WTERMSIG(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
