"""Running a file from the active skill's `scripts/`: what runs, where, and the run itself.

`plan_script` decides everything before anything runs (which file, which interpreter,
the environment without secrets, the bubblewrap sandbox when the machine has a working
one); `run_script` runs the plan in its own process group, with a time limit and an
output cap, and kills the whole group when the cell is interrupted (cancelled).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lily_kernel.errors import ToolError
from lily_kernel.redaction import Redactor, is_secret_name, secret_values
from lily_kernel.tools.registry import ARGS_CONFIG, ActiveSkill, Tool, ToolContext
from lily_kernel.tools.skill_files import resolve_in_skill

__all__ = [
    "MAX_OUTPUT_CHARS",
    "RUN_SKILL_SCRIPT",
    "Sandbox",
    "ScriptPlan",
    "ScriptResult",
    "find_sandbox",
    "plan_script",
    "run_script",
    "run_skill_script_tool",
    "script_environment",
]

RUN_SKILL_SCRIPT = "run_skill_script"
MAX_OUTPUT_CHARS = 20_000
MAX_ARGS = 64
# Shells by extension; Python runs with the kernel's own interpreter, JavaScript with node.
_SHELLS = {".sh": "sh", ".bash": "bash", ".zsh": "zsh"}
_NODE = (".js", ".mjs", ".cjs")


@dataclass(frozen=True)
class Sandbox:
    """bubblewrap as found on this machine: usable, or why not."""

    bwrap: str | None
    reason: str  # why there is no sandbox ("" when there is one)

    @property
    def available(self) -> bool:
        return self.bwrap is not None


def _probe(bwrap: str) -> str:
    """"" when bwrap can build the sandbox here; else why not (it may lack permission
    for namespaces inside a container)."""
    try:
        done = subprocess.run(
            [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net", "--unshare-pid",
             "--die-with-parent", "true"],
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


def script_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without credentials: no variable with a credential-like name, none
    holding a secret or any part of one the redactor would hide (an 8-character run,
    a URL credential, a key-shaped string), and none of Lily's own settings."""
    redact = Redactor(secret_values(environ))
    env = {
        key: value for key, value in environ.items()
        if not is_secret_name(key) and not key.startswith("LILY_")
        and redact(value) == value
    }
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the skill folder is read-only in the sandbox
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _interpreter(path: Path, relative: str, environ: Mapping[str, str]) -> list[str]:
    """The command that runs `path`: by extension, else by its `#!` line."""
    search = environ.get("PATH", os.defpath)
    suffix = path.suffix.lower()
    if suffix == ".py":
        return [sys.executable]
    if suffix in _SHELLS:
        shell = shutil.which(_SHELLS[suffix], path=search) or (
            "/bin/sh" if suffix == ".sh" else None)
        if shell is None:
            raise ToolError(f"'{relative}' needs {_SHELLS[suffix]}, which is not installed.")
        return [shell]
    if suffix in _NODE:
        node = shutil.which("node", path=search)
        if node is None:
            raise ToolError(f"'{relative}' needs node (Node.js), which is not installed.")
        return [node]
    try:
        with open(path, "rb") as handle:
            first = handle.readline(256).decode("utf-8", "replace").strip()
    except OSError as exc:
        raise ToolError(f"cannot read '{relative}': {exc.strerror}.") from None
    if not first.startswith("#!"):
        raise ToolError(f"cannot tell how to run '{relative}': no known extension (.py, .sh, "
                        ".bash, .js) and no #! line.")
    words = first[2:].split()
    if words and Path(words[0]).name == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    if not words:
        raise ToolError(f"'{relative}' has an empty #! line.")
    name = Path(words[0]).name
    if name.startswith("python"):
        return [sys.executable, *words[1:]]
    found = shutil.which(words[0], path=search) if "/" not in words[0] else words[0]
    if found is None or not os.path.exists(found):
        raise ToolError(f"'{relative}' needs {words[0]}, which is not installed.")
    return [found, *words[1:]]


def _sandboxed(bwrap: str, command: list[str], workspace: Path, visible: Sequence[Path],
               read_only: Sequence[Path]) -> list[str]:
    """`command` inside bubblewrap: no network, the file system read-only except the
    workspace (Lily's own files in it stay read-only) and a private, empty /tmp.
    `visible` are shown again (read-only) over that /tmp when they live there (the skill
    folder, the interpreter's installation)."""
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp"]
    for path in visible:
        if path.is_relative_to("/tmp") and path.exists():
            argv += ["--ro-bind", str(path), str(path)]
    argv += ["--bind", str(workspace), str(workspace)]
    for path in read_only:
        if path.exists():
            argv += ["--ro-bind", str(path), str(path)]
    argv += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--die-with-parent",
             "--new-session", "--chdir", str(workspace), "--", *command]
    return argv


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


def plan_script(skill: ActiveSkill, script: str, arguments: Sequence[str], ctx: ToolContext,
                environ: Mapping[str, str], sandbox: Sandbox) -> ScriptPlan:
    """Resolve the script inside the skill's `scripts/` and build its command line."""
    target, relative = resolve_in_skill(skill, script)
    if not relative.startswith("scripts/"):
        raise ToolError(f"'{script}' is not in the skill's scripts/ folder; only files "
                        "there can be run.")
    if not target.is_file():
        raise ToolError(f"no script '{relative}' in the skill '{skill.name}'.")
    if len(arguments) > MAX_ARGS:
        raise ToolError(f"too many arguments ({len(arguments)}; at most {MAX_ARGS}).")
    if any("\0" in arg for arg in arguments):
        raise ToolError("an argument contains a NUL character.")
    try:
        digest = hashlib.sha256(target.read_bytes()).hexdigest()
    except OSError as exc:
        raise ToolError(f"cannot read '{relative}': {exc.strerror}.") from None
    command = [*_interpreter(target, relative, environ), str(target), *arguments]
    workspace = ctx.workspace.resolve()
    if sandbox.bwrap is not None:
        visible = [skill.folder.resolve(), Path(sys.prefix).resolve(),
                   Path(sys.base_prefix).resolve()]
        read_only = [*ctx.protected, workspace / ".lily"]
        command = _sandboxed(sandbox.bwrap, command, workspace, visible, read_only)
    return ScriptPlan(
        skill=skill.name, script=relative, sha256=digest, arguments=tuple(arguments),
        argv=tuple(command), cwd=workspace, env=script_environment(environ),
        sandboxed=sandbox.available, sandbox_note=sandbox.reason,
    )


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


async def _collect(stream: asyncio.StreamReader, limit: int) -> tuple[bytes, int]:
    """Read until EOF, keeping at most `limit` bytes (the rest is counted, not kept, so
    a chatty script never blocks on a full pipe)."""
    kept, total = bytearray(), 0
    while chunk := await stream.read(65536):
        total += len(chunk)
        if len(kept) < limit:
            kept += chunk[: limit - len(kept)]
    return bytes(kept), total


async def run_script(plan: ScriptPlan, timeout: float,
                     max_chars: int = MAX_OUTPUT_CHARS) -> ScriptResult:
    """Run the plan; a cancellation (the stop button) kills its process group."""
    started = time.perf_counter()
    try:
        process = await asyncio.create_subprocess_exec(
            *plan.argv, cwd=plan.cwd, env=plan.env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True)  # its own process group: killed as a whole
    except OSError as exc:
        raise ToolError(f"cannot start '{plan.script}': {exc.strerror or exc}.") from None
    stdout = process.stdout
    assert stdout is not None
    timed_out = False
    code: int | None

    async def finish() -> tuple[bytes, int, int]:
        data, total = await _collect(stdout, max_chars * 4)
        return data, total, await process.wait()

    try:
        data, total, code = await asyncio.wait_for(finish(), timeout)
    except TimeoutError:
        timed_out, code, data, total = True, None, b"", 0
        _kill_group(process)
        await process.wait()
    except BaseException:  # cancelled (the stop button) or anything else: nothing survives
        _kill_group(process)
        with contextlib.suppress(BaseException):
            await asyncio.shield(process.wait())
        raise
    finally:
        _kill_group(process)  # children it left behind in its group
    text = data.decode("utf-8", "replace")
    if len(text) > max_chars or total > len(data):
        text = text[:max_chars] + f"\n[... output truncated: {total:,} bytes in all]"
    return ScriptResult(code, round((time.perf_counter() - started) * 1000, 1), text, total,
                        timed_out)


@dataclass(frozen=True)
class RunSkillScriptArgs:
    __pydantic_config__ = ARGS_CONFIG

    script: str
    """Path of the script relative to the active skill's folder, e.g. scripts/fill.py."""
    args: tuple[str, ...] = ()
    """Command-line arguments, one string each."""


def _only_in_conversation(args: RunSkillScriptArgs, ctx: ToolContext) -> str:
    raise ToolError("run_skill_script runs only when the model calls it in a conversation.")


def run_skill_script_tool() -> Tool:
    return Tool(
        RUN_SKILL_SCRIPT,
        "Run a script from the active skill's scripts/ folder with arguments (working "
        "directory: the workspace). Returns its exit code and output.",
        RunSkillScriptArgs, _only_in_conversation, needs_skill=True, explicit=True,
        kept_by=frozenset({"bash"}),
    )
