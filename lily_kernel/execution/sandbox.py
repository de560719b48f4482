"""Where code runs on this host: bubblewrap, and the environment a run sees.

`find_sandbox` looks for a working bubblewrap; `sandboxed` wraps a command in it (no
network, no capabilities, the file system planned by execution/mounts.py);
`script_environment` is the environment without secrets; `unsandboxed` starts a command
through execution/reaper.py where there is no sandbox.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lily_kernel.execution.mounts import MountPlan
from lily_kernel.execution.way_out import WayOut
from lily_kernel.redaction import Redactor, is_secret_name, secret_values

if TYPE_CHECKING:
    import subprocess

__all__ = [
    "SCRIPT_ENV",
    "Sandbox",
    "find_sandbox",
    "probe_argv",
    "sandboxed",
    "script_environment",
    "search_path",
    "unsandboxed",
]


@dataclass(frozen=True)
class Sandbox:
    """bubblewrap as found on this machine: usable, or why not."""

    bwrap: str | None
    reason: str  # why there is no sandbox ("" when there is one)
    way_out: WayOut | None = None  # the session's proxy, reached from inside (way_out.py)

    @property
    def available(self) -> bool:
        return self.bwrap is not None


# Its own network, process and IPC namespaces, killed with the kernel; and, where the
# kernel runs as root (bubblewrap then keeps every capability for the script), no
# capabilities: CAP_SYS_ADMIN would let a script unmount the read-only binds
# (execution/mounts.py), or remount / writable.
_NAMESPACES = ("--unshare-net", "--unshare-pid", "--unshare-ipc", "--die-with-parent",
               *(("--cap-drop", "ALL") if os.geteuid() == 0 else ()))


def _probe(bwrap: str) -> str:
    """"" when bwrap can build the sandbox here; else why not (it may lack permission
    for namespaces inside a container)."""
    import subprocess  # once a session, with the first script

    try:
        done = subprocess.run(
            [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", *_NAMESPACES, "true"],
            capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap cannot run here ({exc})"
    if done.returncode != 0:
        said = " ".join(done.stderr.split())[:200] or f"exit status {done.returncode}"
        return f"bwrap cannot build a sandbox here ({said})"
    return ""


def search_path(environ: Mapping[str, str]) -> str:
    """The PATH of `environ` without empty or relative entries: those name the working
    folder (the downloaded workspace), whose own `sh` or `python` must not stand in for
    the system's."""
    parts = environ.get("PATH", os.defpath).split(os.pathsep)
    return os.pathsep.join(p for p in parts if os.path.isabs(p))


def find_sandbox(environ: Mapping[str, str]) -> Sandbox:
    """bubblewrap on the PATH of `environ`, if it works on this machine."""
    bwrap = shutil.which("bwrap", path=search_path(environ))
    if bwrap is None:
        return Sandbox(None, "bubblewrap (bwrap) is not installed")
    problem = _probe(bwrap)
    return Sandbox(bwrap, "") if not problem else Sandbox(None, problem)


# What a script's environment holds (an allowlist, not a list of names to drop): what a
# program needs to run, and the variables the person names in `script_env`.
SCRIPT_ENV = frozenset({"PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM", "USER",
                        "LOGNAME", "SHELL", "PYTHONIOENCODING", "NO_COLOR"})


def script_environment(environ: Mapping[str, str], allowed: Collection[str] = ()
                       ) -> dict[str, str]:
    """The variables of `environ` a script sees: SCRIPT_ENV and the locale (`LC_*`),
    none holding a secret or any part of one the redactor would hide (an 8-character
    run, a URL credential, a key-shaped string); and those the person names in
    `allowed` (lily.yaml's `script_env`), whatever they hold."""
    redact = Redactor(secret_values(environ))
    env = {
        key: value for key, value in environ.items()
        if key in allowed or ((key in SCRIPT_ENV or key.startswith("LC_"))
                              and not is_secret_name(key) and redact(value) == value)
    }
    if "PATH" in env:
        env["PATH"] = search_path(env)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the skill folder is read-only in the sandbox
    env["PYTHONUNBUFFERED"] = "1"
    return env


def probe_argv(bwrap: str, command: list[str]) -> list[str]:
    """`command` in a sandbox that only looks: the host's files read-only, no network,
    no capabilities (asking an interpreter where its environment is)."""
    return [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *_NAMESPACES,
            "--new-session", "--chdir", "/", "--", *command]


def sandboxed(bwrap: str, command: list[str], workspace: Path, mounts: MountPlan,
              way_out: WayOut | None = None) -> list[str]:
    """`command` inside bubblewrap: the file system of `mounts` (execution/mounts.py), its
    own namespaces, no capabilities, in `workspace`; with `way_out`, the proxy's socket
    bound in and the command started behind its bridge (execution/way_out.py)."""
    binds, command = (way_out.binds(), way_out.wrap(command)) if way_out else ([], command)
    return [bwrap, *mounts.argv, *binds, *_NAMESPACES, "--new-session", "--chdir",
            str(workspace), "--", *command]


REAPER = Path(__file__).with_name("reaper.py")


def unsandboxed(command: list[str]) -> list[str]:
    """`command` run through execution/reaper.py (Linux), so that no process it detaches
    (setsid, a double fork) outlives the run; elsewhere the command alone."""
    if not sys.platform.startswith("linux"):
        return command
    return [sys.executable, "-I", "-S", str(REAPER), *command]


def kill_sandbox(process: subprocess.Popen[bytes]) -> None:
    """End a long-lived sandbox started in a session of its own (`start_new_session`):
    bubblewrap and everything in it, at once; then reap it."""
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)  # its own session
    with contextlib.suppress(OSError):
        process.kill()
    with contextlib.suppress(Exception):
        process.wait(timeout=5)
