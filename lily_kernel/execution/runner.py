"""Running a planned process: its own process group, a time limit, an output cap, and
nothing left behind when it ends, times out or the cell is stopped.

`run_script` runs a `ScriptPlan`; `ScriptHost` holds how one session runs them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lily_kernel.errors import ToolError
from lily_kernel.execution.mounts import remove_placeholders
from lily_kernel.execution.sandbox import Sandbox, find_sandbox

if TYPE_CHECKING:  # asyncio comes with the first run: `lily skills` builds no run
    import asyncio

__all__ = ["MAX_OUTPUT_CHARS", "ScriptHost", "ScriptPlan", "ScriptResult", "run_script"]

MAX_OUTPUT_CHARS = 20_000


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
    ends everything the script started (execution/reaper.py; bubblewrap's PID namespace),
    then SIGKILL to its process group."""
    import asyncio

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
    import asyncio

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
    for once, on first use), the time limit in seconds, and the runner (the runtime's
    collaborators give it: replay's gives the recorded results)."""

    environ: Mapping[str, str]
    timeout: float
    run: Callable[[ScriptPlan, float], Awaitable[ScriptResult]] = run_script
    allowed_env: tuple[str, ...] = ()  # lily.yaml's `script_env`: passed to scripts
    _sandbox: Sandbox | None = field(default=None, repr=False)

    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = find_sandbox(self.environ)
        return self._sandbox
