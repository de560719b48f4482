"""Running a planned process: its own process group, a time limit, an output cap, and
nothing left behind when it ends, times out or the cell is stopped.

`run_process` runs a `ProcessPlan` (execution/plan.py makes one): a skill's script
(`ScriptPlan`, tools/scripts.py) or a shell command line (tools/shell.py), the one way
either runs. A sandboxed run goes into a control group of its own where the host allows
it (execution/cgroups.py). `ScriptHost` holds how one session runs them.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from lily_kernel.errors import ToolError
from lily_kernel.execution.launch import Launch, Started, kill_holders, start_here
from lily_kernel.execution.limits import Limits, ReadsSettings, SettingsSource

if TYPE_CHECKING:  # asyncio, the sandbox and control groups come with the first run:
    import asyncio  # `lily skills` and the kernel's start build no run

    from lily_kernel.execution.installs import RunEnvironment
    from lily_kernel.execution.mounts import MountPlan
    from lily_kernel.execution.sandbox import Sandbox
    from lily_kernel.execution.way_out import WayOut

__all__ = [
    "KEPT_BYTES",
    "MAX_OUTPUT_CHARS",
    "Launch",
    "OnOutput",
    "ProcessPlan",
    "RunResult",
    "ScriptHost",
    "ScriptPlan",
    "ScriptResult",
    "Started",
    "run_process",
    "run_script",
]

MAX_OUTPUT_CHARS = 20_000
# What a run's output keeps (and the cell shows) at most: MAX_OUTPUT_CHARS characters of
# UTF-8 at their widest.
KEPT_BYTES = MAX_OUTPUT_CHARS * 4


@dataclass(frozen=True, kw_only=True)
class ProcessPlan:
    """Everything about one run, decided before it starts (what the person approves):
    the command line (bubblewrap's, with the command inside), its folder and
    environment, whether it is sandboxed (and why not), its sandbox's file system (whose
    placeholders go after it), and its limits (None: none, outside the sandbox)."""

    argv: tuple[str, ...]
    cwd: Path
    env: dict[str, str]
    sandboxed: bool
    sandbox_note: str  # why it is not sandboxed ("" when it is)
    mounts: MountPlan | None = None
    limits: Limits | None = None

    @property
    def label(self) -> str:
        """What the run is called in an error ("cannot start …")."""
        return "the command"


@dataclass(frozen=True, kw_only=True)
class ScriptPlan(ProcessPlan):
    """A skill script's run: which script of which skill, its sha256 and arguments."""

    skill: str
    script: str  # relative to the skill folder, e.g. scripts/fill.py
    sha256: str
    arguments: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"'{self.script}'"


@dataclass(frozen=True)
class RunResult:
    """How a run ended and what it printed (stdout and stderr together, capped; what the
    cap cut and what was set aside after it said at its end, as the log keeps it), the
    time limit it ran under (None: not known, a recorded run)."""

    exit_code: int | None  # None when it was killed for the time limit
    duration_ms: float
    output: str
    output_bytes: int  # everything it printed, including what the cap cut
    timed_out: bool = False
    timeout: float | None = None

    def for_model(self, limit_seconds: float) -> str:
        """The run as the model reads it (prompting/runs.py words it)."""
        from lily_kernel.prompting.runs import process_text

        return process_text(self, limit_seconds)


# Where a run's output goes as it comes (the cell: tools/shell.py, tools/scripts.py):
# which stream ("stdout" or "stderr") and its text, only what the cap keeps.
OnOutput = Callable[[str, str], None]


def _quiet(name: str, text: str) -> None:
    """The `on_output` of a run no one watches."""


@dataclass
class _Output:
    """What a script printed, stdout and stderr in the order they came: at most `limit`
    bytes kept (and passed on as they come), everything counted (so a chatty script
    never blocks on a full pipe)."""

    limit: int
    on_output: OnOutput = _quiet
    kept: bytearray = field(default_factory=bytearray)
    total: int = 0

    async def collect(self, stream: asyncio.StreamReader, name: str = "stdout") -> None:
        import codecs

        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        while chunk := await stream.read(65536):
            self.total += len(chunk)
            if len(self.kept) < self.limit:
                part = chunk[: self.limit - len(self.kept)]
                self.kept += part
                if text := decoder.decode(part, final=len(self.kept) >= self.limit):
                    self.on_output(name, text)


# Once the script itself has ended, how long its output may still arrive: a process it
# left behind holding the pipe open must not keep the cell waiting to the time limit.
OUTPUT_GRACE = 1.0


# The name skill scripts' callers know the result by.
ScriptResult = RunResult


async def run_process(plan: ProcessPlan, timeout: float,
                      max_chars: int = MAX_OUTPUT_CHARS, *,
                      on_output: OnOutput = _quiet, launch: Launch | None = None
                      ) -> RunResult:
    """Run the plan; a cancellation (the stop button) kills its process group. The
    output comes through pipes of Lily's own (not the subprocess transport's), one for
    stdout and one for stderr, so the run ends when the command does, whatever a process
    it left behind holds; what the cap keeps of it is passed to `on_output` as it comes
    (in the order it is read: the two streams' order within a moment is not kept). Started
    from the event loop's thread (bubblewrap's `--die-with-parent` follows the thread
    that started it), never from a worker thread. `launch`: how it starts (the shell's
    session sandbox, execution/shell_session.py); by default, here, as planned."""
    import asyncio

    # The workspace looked at again (off the event loop): a run waits for no plan the
    # workspace has outgrown (a .env made while the person was asked is not hidden).
    if plan.mounts is not None and (changed := await asyncio.to_thread(plan.mounts.changes)):
        from lily_kernel.prompting.runs import outgrown_reason

        raise ToolError(outgrown_reason(changed))
    started = time.perf_counter()
    pipes = {name: os.pipe() for name in ("stdout", "stderr")}
    try:
        child = await (launch or functools.partial(start_here, plan))(
            pipes["stdout"][1], pipes["stderr"][1])
    except OSError as exc:
        for read_end, _ in pipes.values():
            os.close(read_end)
        from lily_kernel.prompting.runs import not_started_reason

        raise ToolError(not_started_reason(plan.label, exc.strerror or str(exc))) from None
    finally:
        for _, write_end in pipes.values():
            os.close(write_end)
    loop = asyncio.get_running_loop()
    timed_out = False
    code: int | None
    output = _Output(KEPT_BYTES * max_chars // MAX_OUTPUT_CHARS, on_output)
    transports, readers = [], []
    for name, (read_end, _) in pipes.items():
        stream = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(
            lambda stream=stream: asyncio.StreamReaderProtocol(stream),  # type: ignore[misc]
            os.fdopen(read_end, "rb", 0))
        transports.append(transport)
        readers.append(output.collect(stream, name))
    reading = asyncio.ensure_future(asyncio.gather(*readers))

    async def finish() -> int:
        code = await child.wait()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(OUTPUT_GRACE):
                await asyncio.shield(reading)
        return code

    try:  # (not wait_for: on 3.11 it loses a stop that meets the command's end)
        async with asyncio.timeout(timeout):
            code = await finish()
    except TimeoutError:
        timed_out, code = True, None
        output = _Output(0)
        await child.stop()
    except BaseException:  # cancelled (the stop button) or anything else: nothing survives
        with contextlib.suppress(BaseException):
            await asyncio.shield(child.stop())
        raise
    finally:
        child.ended()  # children it left behind in its group
        if not reading.done():  # and those outside it, still holding the output
            with contextlib.suppress(OSError):
                kill_holders([read_end for read_end, _ in pipes.values()])
        reading.cancel()
        reading.add_done_callback(lambda done: done.cancelled() or done.exception())
        for transport in transports:
            transport.close()
        await asyncio.shield(child.close())  # (its control group; what it left running)
        # Once nothing of the run is left: its placeholders, what it may not keep.
        undone = (await asyncio.shield(asyncio.to_thread(plan.mounts.tidy))
                  if plan.mounts is not None else ())
    from lily_kernel.prompting.runs import cut_process_output, removed_note

    data, total = bytes(output.kept), output.total
    text = data.decode("utf-8", "replace")
    if len(text) > max_chars or total > len(data):
        text = cut_process_output(text, max_chars, total)
    if undone:
        text += "\n" + removed_note(undone, links=True)
    return RunResult(code, round((time.perf_counter() - started) * 1000, 1), text, total,
                     timed_out, timeout)


# The name skill scripts' callers know the runner by.
run_script = run_process


class ShellSession(Protocol):
    """The shell's session sandbox as the host holds it (execution/shell_session.py)."""

    def close(self) -> None: ...

    def end_turn(self) -> tuple[tuple[tuple[int, str], ...], int]: ...


@dataclass
class ScriptHost(ReadsSettings):
    """How this session runs skill scripts and shell commands: the host's environment,
    bubblewrap (looked for once, on first use), the settings of a run (time limit in
    seconds, variables passed, limits of a sandboxed run; a session's are read from its
    workspace at each use), and the skill scripts' runner (the runtime's collaborators
    give it: replay's gives the recorded results; a shell command always runs)."""

    environ: Mapping[str, str]
    settings: SettingsSource
    run: Callable[[ScriptPlan, float], Awaitable[RunResult]] = run_process
    # The session's way out of the sandbox (its proxy, started on first use), given to
    # every sandboxed run: runtime/services.py.
    way_out: Callable[[], WayOut | None] | None = None
    # The session's Python environment (the kernel's, with the workspace's installs):
    # its bin/ first on every run's PATH, skill scripts' Python. runtime/services.py.
    python: Callable[[], RunEnvironment | None] | None = None
    _sandbox: Sandbox | None = field(default=None, repr=False)
    # The shell's session sandbox (execution/shell_session.py's `ShellSessions`), made
    # by the shell tool with a turn's first command, ended with the turn (`end_turn`)
    # or the session (`close`).
    shell: ShellSession | None = field(default=None, repr=False)

    def close(self) -> None:
        """End the shell's session sandbox and everything in it (the session ends)."""
        if self.shell is not None:
            self.shell.close()

    def end_turn(self) -> tuple[tuple[tuple[int, str], ...], int]:
        """End the shell's sandbox with the turn: what the turn's commands left running
        (processes, count), ended."""
        return self.shell.end_turn() if self.shell is not None else ((), 0)

    def python_environment(self) -> RunEnvironment | None:
        """The session's Python environment for a run; None when there is none or it
        cannot be found (the `python` tool says why; a command runs with the host's PATH)."""
        if self.python is None:
            return None
        from lily_kernel.errors import LilyError

        try:
            return self.python()
        except LilyError:
            return None

    @property
    def live(self) -> bool:
        """Whether skill scripts really run here (replay's runner gives recorded results)."""
        return self.run is run_process

    async def run_shown(self, plan: ScriptPlan, on_output: OnOutput) -> RunResult:
        """The plan run with `run`, its output passed to `on_output` as it comes (a
        runner that does not stream, replay's, gives it whole once the run ended)."""
        if self.live:
            return await run_process(plan, self.timeout, on_output=on_output)
        result = await self.run(plan, self.timeout)
        if result.output:
            on_output("stdout", result.output)
        return result

    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            from lily_kernel.execution.sandbox import find_sandbox

            self._sandbox = find_sandbox(self.environ)
        if self.way_out is not None and self._sandbox.available:
            from dataclasses import replace

            return replace(self._sandbox, way_out=self.way_out())
        return self._sandbox
