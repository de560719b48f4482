"""How a skill script runs on this host: bubblewrap, the environment, the run itself.

`find_sandbox` looks for a working bubblewrap; `sandboxed` wraps a command in it (no
network, the file system read-only but the workspace); `script_environment` is the
environment without secrets; `run_script` runs a `ScriptPlan` in its own process group,
with a time limit and an output cap, and kills the whole group when the cell is
interrupted (cancelled). `ScriptHost` holds these for one session.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lily_kernel.errors import ToolError
from lily_kernel.redaction import Redactor, is_secret_name, secret_values

__all__ = [
    "MAX_OUTPUT_CHARS",
    "SCRIPT_ENV",
    "WORKSPACE_HIDDEN",
    "WORKSPACE_READ_ONLY",
    "Mounts",
    "Sandbox",
    "ScriptHost",
    "ScriptPlan",
    "ScriptResult",
    "find_sandbox",
    "own_mounts",
    "remove_placeholders",
    "run_script",
    "sandboxed",
    "script_environment",
    "unsandboxed",
]

MAX_OUTPUT_CHARS = 20_000


@dataclass(frozen=True)
class Sandbox:
    """bubblewrap as found on this machine: usable, or why not."""

    bwrap: str | None
    reason: str  # why there is no sandbox ("" when there is one)

    @property
    def available(self) -> bool:
        return self.bwrap is not None


# Emptied: where the host keeps its Unix sockets (Docker's, D-Bus's, the user's agents
# under /run/user/<uid>), which --unshare-net does not cut off.
_RUN_FOLDERS = (Path("/run"), Path("/var/run"))
# Its own network, process and IPC namespaces, killed with the kernel; and, where the
# kernel runs as root (bubblewrap then keeps every capability for the script), no
# capabilities: CAP_SYS_ADMIN would let a script unmount the read-only binds below, or
# remount / writable.
_NAMESPACES = ("--unshare-net", "--unshare-pid", "--unshare-ipc", "--die-with-parent",
               *(("--cap-drop", "ALL") if os.geteuid() == 0 else ()))


def _probe(bwrap: str) -> str:
    """"" when bwrap can build the sandbox here; else why not (it may lack permission
    for namespaces inside a container)."""
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


def find_sandbox(environ: Mapping[str, str]) -> Sandbox:
    """bubblewrap on the PATH of `environ`, if it works on this machine."""
    bwrap = shutil.which("bwrap", path=environ.get("PATH", os.defpath))
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
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the skill folder is read-only in the sandbox
    env["PYTHONUNBUFFERED"] = "1"
    return env


# The sandbox's rules, in one place (docs/skills.md, "The sandbox", shows them as a table).
# In the workspace, read-only whether or not they exist yet: what Lily reads as
# configuration or instructions, and what runs code later. Missing ones are held by an
# empty read-only placeholder for the run (removed after it), so none can be planted.
WORKSPACE_READ_ONLY = ("lily.yaml", ".lily", "persona", "skills", ".agents", ".claude",
                       ".git")
# In the workspace, unreadable (an empty file in their place) when they exist, at its
# top and in its folders one level down: dotenv files (`.env`, `.env.local`…) and
# direnv's `.envrc` (which also runs when the person enters the folder).
WORKSPACE_HIDDEN = (".env", ".env.*", ".envrc")
# Places that run code later, at the workspace's top and one level down, read-only: a
# virtual environment (a folder holding pyvenv.cfg), a conda environment (conda-meta/),
# a repository's .git/ (its hooks).
_SCANNED = 5_000  # entries looked at, at most, for these (a huge workspace is not walked)
# Besides: Lily's own files named by the tool context (every skills root, the persona
# folders, the Lily home and its trust store) are read-only; the home folder is an
# empty private one (no ~/.ssh, ~/.aws, ~/.config, ~/.netrc, dotfiles), through which
# the skill's folder and the interpreter's installation show read-only; /tmp and /run
# are private and empty; no network; no capabilities; everything else is read-only.
# When the workspace is the home folder (or holds it), the home folder's dotfiles stay
# hidden in it, and these, which shells and tools run or read later, cannot be created:
HOME_STARTUP_FILES = (".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
                      ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".gitconfig", ".netrc",
                      ".pypirc", ".npmrc")
HOME_STARTUP_FOLDERS = (".config", ".local", ".ssh", ".aws", ".gnupg", ".docker", ".kube")
_FILE_SUFFIXES = (".yaml", ".yml", ".json", ".md", ".env")


def _private_files(home: Path) -> list[Path]:
    """The home folder's dotfiles and dot-folders (~/.ssh, ~/.aws, ~/.config, ~/.netrc…)."""
    try:
        return sorted(p for p in home.iterdir() if p.name.startswith("."))
    except OSError:
        return []


def _hide(path: Path) -> list[str]:
    """bubblewrap's arguments that put an empty file or folder over `path`."""
    if path.is_dir() and not path.is_symlink():
        return ["--tmpfs", str(path), "--remount-ro", str(path)]
    return ["--ro-bind", "/dev/null", str(path)]


@dataclass(frozen=True)
class Mounts:
    """bubblewrap's arguments for Lily's own paths, and the placeholders to remove."""

    argv: tuple[str, ...]
    placeholders: tuple[Path, ...]


def _outermost_missing(path: Path, workspace: Path) -> Path:
    """The highest folder of `path` (inside the workspace) that does not exist."""
    while path.parent != workspace and not path.parent.exists():
        path = path.parent
    return path


def _near_top(workspace: Path) -> list[Path]:
    """The workspace's entries at its top and one level down (at most _SCANNED), in
    name order."""
    found: list[Path] = []
    try:
        top = sorted(workspace.iterdir())[:_SCANNED]
    except OSError:
        return []
    found += top
    for folder in top:
        if len(found) >= _SCANNED:
            break
        if folder.is_dir() and not folder.is_symlink() and folder.name != ".git":
            with contextlib.suppress(OSError):
                found += sorted(folder.iterdir())[: _SCANNED - len(found)]
    return found


def _runs_later(entry: Path) -> bool:
    return entry.is_dir() and not entry.is_symlink() and (
        entry.name == ".git" or (entry / "pyvenv.cfg").is_file()
        or (entry / "conda-meta").is_dir())


def _hidden(entry: Path) -> bool:
    return entry.is_file() and any(fnmatch.fnmatchcase(entry.name, p) for p in WORKSPACE_HIDDEN)


def own_mounts(workspace: Path, protected: Sequence[Path], home: Path | None = None) -> Mounts:
    """Read-only binds for Lily's own paths and the places that run code later (a
    placeholder where one is missing), and empty files over the hidden ones. `home`:
    the home folder, whose startup files are kept too when the workspace holds it."""
    argv: list[str] = []
    placeholders: list[Path] = []
    seen: set[Path] = set()
    startup = ([home / n for n in (*HOME_STARTUP_FILES, *HOME_STARTUP_FOLDERS)]
               if home is not None and home.is_relative_to(workspace) else [])
    near = _near_top(workspace)
    for path in [*(workspace / n for n in WORKSPACE_READ_ONLY), *filter(_runs_later, near),
                 *(Path(os.path.abspath(p)) for p in protected), *startup]:
        if path in seen:
            continue
        seen.add(path)
        if path.exists():
            argv += ["--ro-bind", str(path), str(path)]
        elif path.is_relative_to(workspace) and path != workspace:
            held = _outermost_missing(path, workspace)
            if held in seen and held != path:
                continue
            seen.add(held)
            placeholders.append(held)
            if held == path and (path.suffix in _FILE_SUFFIXES
                                 or path.name in HOME_STARTUP_FILES):
                argv += ["--ro-bind", "/dev/null", str(path)]
            else:
                argv += ["--tmpfs", str(held), "--remount-ro", str(held)]
    for path in filter(_hidden, near):
        argv += ["--ro-bind", "/dev/null", str(path)]
    return Mounts(tuple(argv), tuple(placeholders))


def remove_placeholders(placeholders: Sequence[Path]) -> None:
    """Remove the empty files and folders bubblewrap made as mount points (never one
    that holds anything)."""
    for path in placeholders:
        with contextlib.suppress(OSError):
            if path.is_dir() and not path.is_symlink():
                path.rmdir()  # only when empty
            elif path.is_file() and path.stat().st_size == 0:
                path.unlink()


def sandboxed(bwrap: str, command: list[str], workspace: Path, visible: Sequence[Path],
              mounts: Mounts, home: Path | None) -> list[str]:
    """`command` inside bubblewrap, by the rules above. When the workspace is the home
    folder (or holds it), the home folder's dotfiles stay hidden in it. `visible` are
    shown again (read-only) over the private /tmp, home folder and dotfiles when they
    live there (the skill folder, the interpreter's installation)."""
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp"]
    private = [Path("/tmp")]
    for run in _RUN_FOLDERS:  # the host's sockets (a read-only bind still lets connect())
        if run.is_dir() and not run.is_symlink():
            argv += ["--tmpfs", str(run)]
            private.append(run)
    if home is not None and home.is_dir() and home != Path("/"):
        argv += ["--tmpfs", str(home)]
        private.append(home)
    argv += ["--bind", str(workspace), str(workspace), *mounts.argv]
    if home is not None and home != Path("/") and home.is_relative_to(workspace):
        hidden = _private_files(home)  # the workspace showed the home folder again
        argv += [arg for path in hidden for arg in _hide(path)]
        private += hidden
    for path in visible:
        if any(path.is_relative_to(p) for p in private) and path.exists():
            argv += ["--ro-bind", str(path), str(path)]
    argv += [*_NAMESPACES, "--new-session", "--chdir", str(workspace), "--", *command]
    return argv


REAPER = Path(__file__).with_name("reaper.py")


def unsandboxed(command: list[str]) -> list[str]:
    """`command` run through tools/reaper.py (Linux), so that no process it detaches
    (setsid, a double fork) outlives the run; elsewhere the command alone."""
    if not sys.platform.startswith("linux"):
        return command
    return [sys.executable, "-I", "-S", str(REAPER), *command]


@dataclass(frozen=True)
class ScriptPlan:
    """Everything about one run, decided before it starts (what the person approves)."""

    skill: str
    script: str  # relative to the skill folder, e.g. scripts/fill.py
    sha256: str
    arguments: tuple[str, ...]
    argv: tuple[str, ...]
    cwd: Path
    env: dict[str, str]
    sandboxed: bool
    sandbox_note: str  # why it is not sandboxed ("" when it is)
    placeholders: tuple[Path, ...] = ()  # mount points to remove after the run


@dataclass(frozen=True)
class ScriptResult:
    """How a run ended and what it printed (stdout and stderr together, capped)."""

    exit_code: int | None  # None when it was killed for the time limit
    duration_ms: float
    output: str
    output_bytes: int  # everything it printed, including what the cap cut
    timed_out: bool = False

    def for_model(self, limit_seconds: float) -> str:
        if self.timed_out:
            status = f"stopped: it ran longer than the time limit ({limit_seconds:g} s)"
        else:
            status = f"exit code {self.exit_code}"
        body = self.output if self.output.strip() else "(no output)"
        return f"[{status}]\n{body}"


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


# How long the process started (the reaper, or bubblewrap) has, after SIGTERM, to end
# what the script started before its whole group is killed.
STOP_GRACE = 2.0


async def _stop(process: asyncio.subprocess.Process) -> None:
    """End a run early (time limit, stop button): SIGTERM to the process started, which
    ends everything the script started (tools/reaper.py; bubblewrap's PID namespace),
    then SIGKILL to its process group."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        process.send_signal(signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), STOP_GRACE)
    _kill_group(process)
    await process.wait()


@dataclass
class _Output:
    """What a script printed: at most `limit` bytes kept, everything counted (so a
    chatty script never blocks on a full pipe)."""

    limit: int
    kept: bytearray = field(default_factory=bytearray)
    total: int = 0

    async def collect(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self.total += len(chunk)
            if len(self.kept) < self.limit:
                self.kept += chunk[: self.limit - len(self.kept)]


# Once the script itself has ended, how long its output may still arrive: a process it
# left behind holding the pipe open must not keep the cell waiting to the time limit.
OUTPUT_GRACE = 1.0


def _kill_holders(pipe: int) -> None:
    """Kill every process of ours still holding the output pipe's write end: a child the
    script detached (setsid, a double fork) outside its process group. Linux: by the
    pipe's inode in /proc/<pid>/fd."""
    wanted = f"pipe:[{os.fstat(pipe).st_ino}]"
    me = os.getpid()
    for pid in filter(str.isdigit, os.listdir("/proc") if os.path.isdir("/proc") else ()):
        if int(pid) == me:
            continue
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == wanted:
                        os.kill(int(pid), signal.SIGKILL)
                        break


async def run_script(plan: ScriptPlan, timeout: float,
                     max_chars: int = MAX_OUTPUT_CHARS) -> ScriptResult:
    """Run the plan; a cancellation (the stop button) kills its process group. The
    output comes through a pipe of Lily's own (not the subprocess transport's), so the
    run ends when the script does, whatever a process it left behind holds."""
    started = time.perf_counter()
    read_end, write_end = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            *plan.argv, cwd=plan.cwd, env=plan.env, stdin=asyncio.subprocess.DEVNULL,
            stdout=write_end, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True)  # its own process group: killed as a whole
    except OSError as exc:
        os.close(read_end)
        raise ToolError(f"cannot start '{plan.script}': {exc.strerror or exc}.") from None
    finally:
        os.close(write_end)
    loop = asyncio.get_running_loop()
    stdout = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(stdout), os.fdopen(read_end, "rb", 0))
    timed_out = False
    code: int | None
    output = _Output(max_chars * 4)
    reading = asyncio.ensure_future(output.collect(stdout))

    async def finish() -> int:
        code = await process.wait()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(reading), OUTPUT_GRACE)
        return code

    try:
        code = await asyncio.wait_for(finish(), timeout)
    except TimeoutError:
        timed_out, code = True, None
        output = _Output(0)
        await _stop(process)
    except BaseException:  # cancelled (the stop button) or anything else: nothing survives
        with contextlib.suppress(BaseException):
            await asyncio.shield(_stop(process))
        raise
    finally:
        _kill_group(process)  # children it left behind in its group
        if not reading.done():  # and those outside it, still holding the output
            with contextlib.suppress(OSError):
                _kill_holders(read_end)
        reading.cancel()
        transport.close()
        remove_placeholders(plan.placeholders)
    data, total = bytes(output.kept), output.total
    text = data.decode("utf-8", "replace")
    if len(text) > max_chars or total > len(data):
        text = text[:max_chars] + f"\n[... output truncated: {total:,} bytes in all]"
    return ScriptResult(code, round((time.perf_counter() - started) * 1000, 1), text, total,
                        timed_out)


@dataclass
class ScriptHost:
    """How this session runs skill scripts: the host's environment, bubblewrap (looked
    for once, on first use), the time limit in seconds, and the runner (replay swaps in
    the recorded results)."""

    environ: Mapping[str, str]
    timeout: float
    run: Callable[[ScriptPlan, float], Awaitable[ScriptResult]] = run_script
    allowed_env: tuple[str, ...] = ()  # lily.yaml's `script_env`: passed to scripts
    _sandbox: Sandbox | None = field(default=None, repr=False)

    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = find_sandbox(self.environ)
        return self._sandbox
