"""What the model reads about a run: how it ended, what was cut, why it could not run.

execution/ returns facts (a process's `RunResult`, the Python kernel's `RunReply`); their
words are written here once: the status line (`[ran]`, `[error: …]`, `[stopped: …]`,
`[exit code N]`), the notes of what was cut or set aside, an error's short traceback (the
person's stderr shows the same), and the refusals of a machine without a sandbox or of a
workspace at `/`. Whoever needs to know how a run ended reads its facts, never these
words. Pure: values in, text out (the facts are described by shape, not imported).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

from lily_kernel.visible import program_output

__all__ = [
    "TRACEBACK_ENTRIES",
    "KernelEnd",
    "ProcessEnd",
    "cut_output",
    "cut_process_output",
    "cut_read",
    "held_skills_note",
    "kernel_status",
    "kernel_text",
    "missing_module_note",
    "no_sandbox_reason",
    "not_started_reason",
    "outgrown_reason",
    "process_status",
    "process_text",
    "refusal_note",
    "removed_note",
    "restarted_note",
    "root_workspace_reason",
    "stopped_reason",
    "traceback_summary",
    "written_note",
]

TRACEBACK_ENTRIES = 3  # the last entries of a traceback: where it failed, and why
# Who runs only in the sandbox, and how its refusal says to get one.
Runner = Literal["code", "Python"]
_INSTALL = {"code": "the `bubblewrap` package, e.g. `apt install bubblewrap`",
            "Python": "apt-get install bubblewrap"}
_CONFINED = {"code": "nothing run there can", "Python": "Python cannot"}


class ProcessEnd(Protocol):
    """How a process ended (execution/runner.py's RunResult)."""

    @property
    def exit_code(self) -> int | None: ...
    @property
    def timed_out(self) -> bool: ...
    @property
    def output(self) -> str: ...
    @property
    def timeout(self) -> float | None: ...


class KernelEnd(Protocol):
    """How a run in the Python kernel ended (execution/run_outputs.py's RunReply)."""

    @property
    def status(self) -> str: ...
    @property
    def outputs(self) -> Sequence[Mapping[str, Any]]: ...
    @property
    def error(self) -> str | None: ...
    @property
    def missing_module(self) -> str | None: ...
    @property
    def output_bytes(self) -> int: ...
    @property
    def dropped(self) -> int: ...
    @property
    def kernel_ended(self) -> bool: ...
    @property
    def timeout(self) -> float: ...
    @property
    def limit_bytes(self) -> int: ...


def no_sandbox_reason(runner: Runner, why: str) -> str:
    """Why a run that needs the sandbox is refused here (`why`: the sandbox's reason),
    and what to do."""
    return (f"{runner} runs only in the sandbox, and there is none here ({why}); install "
            f"bubblewrap ({_INSTALL[runner]}) and restart the kernel")


def root_workspace_reason(runner: Runner) -> str:
    """Why nothing runs sandboxed in a workspace that is the root folder."""
    return (f"the workspace is the root folder (/): {_CONFINED[runner]} be confined to it; "
            "open the notebook from a project folder.")


def outgrown_reason(changed: Sequence[str]) -> str:
    """Why a planned run did not start: the workspace changed where the sandbox protects
    it since the plan (the person was shown)."""
    return (f"nothing ran: {', '.join(changed)} changed in the workspace after the command "
            "was planned, and the sandbox protects what was there; run it again.")


def not_started_reason(label: str, why: str) -> str:
    """A run whose process could not be started (`label`: what it runs)."""
    return f"cannot start {label}: {why}."


def _over_time(limit_seconds: float) -> str:
    return f"it ran longer than the time limit ({limit_seconds:g} s)"


def cut_output(text: str, max_chars: int) -> str:
    """Output the model reads, cut at `max_chars` with a note of its whole length."""
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + f"\n[... output truncated: {len(text):,} characters]"


def cut_read(text: str, max_chars: int) -> str:
    """A file's text as a read returns it past `max_chars`: cut, and said so."""
    return text[:max_chars] + f"\n[... truncated at {max_chars:,} characters]"


def cut_process_output(text: str, max_chars: int, total_bytes: int) -> str:
    """What a process printed, cut at `max_chars`, with the size of all it printed."""
    return text[:max_chars] + f"\n[... output truncated: {total_bytes:,} bytes in all]"


def removed_note(names: Sequence[str], *, links: bool) -> str:
    """What a run made that the sandbox does not keep (`links`: its links restored too)."""
    kept = "and its links as they were; " if links else ""
    return (f"[removed after the run: {', '.join(names)} (the sandbox keeps no new "
            "dot-entry at the workspace's top nor new files at Lily's own paths"
            f"{', ' if links else '; '}{kept}set aside in .lily/removed/)]")


def restarted_note(changed: Sequence[str]) -> str:
    """The Python kernel started again before a run: what changed, what was lost."""
    return (f"[the Python kernel was started again: {', '.join(changed)} changed in the "
            "workspace since it started, and its sandbox no longer protected it; its "
            "variables are gone]")


def process_status(end: ProcessEnd, limit_seconds: float | None = None) -> str:
    """How a process ended, in a few words (`limit_seconds`: its time limit, when the
    result does not hold it)."""
    if end.timed_out:
        limit = limit_seconds if limit_seconds is not None else end.timeout
        return f"stopped: {_over_time(limit or 0)}"
    return f"exit code {end.exit_code}"


def process_text(end: ProcessEnd, limit_seconds: float | None = None) -> str:
    """A process's run as the model reads it: how it ended, then what it printed."""
    body = end.output if end.output.strip() else "(no output)"
    missing = _missing_in(end.output[-4000:]) if end.exit_code not in (0, None) else None
    if missing:
        body += "\n" + missing_module_note(missing)
    return f"[{process_status(end, limit_seconds)}]\n{body}"


def stopped_reason(reply: KernelEnd) -> str:
    """Why a kernel's run was stopped early and what became of the kernel ("" when it
    was not)."""
    why = {"timeout": _over_time(reply.timeout),
           "output_limit": f"its output passed the limit of a run ({reply.limit_bytes:,} bytes)",
           }.get(reply.status)
    if why is None:
        return ""
    if reply.kernel_ended:
        return (f"{why} and it did not stop when interrupted: the kernel was ended, its "
                "variables are gone; the next run starts a new one")
    return f"{why}; it was interrupted, the kernel and its variables are kept"


def kernel_status(reply: KernelEnd) -> str:
    """How a kernel's run ended, in a few words."""
    stopped = stopped_reason(reply)
    if stopped:
        return f"stopped: {stopped}"
    return f"error: {reply.error}" if reply.status == "error" else "ran"


def traceback_summary(output: Mapping[str, Any]) -> str:
    """An error output's short traceback, as plain text: its last entries (where and why)."""
    entries = [program_output(str(e)) for e in output.get("traceback", []) if str(e).strip()]
    summary = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
    shown = entries[-TRACEBACK_ENTRIES:] or [program_output(summary)]
    return "\n".join(shown)


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _said(output: Mapping[str, Any]) -> str:
    """What the model reads of one output: a stream's text, an error's short traceback,
    a display's plain text and a line naming what only the person sees."""
    kind = output.get("output_type")
    if kind == "stream":
        return _text(output.get("text", ""))
    if kind == "error":
        return traceback_summary(output) + "\n"
    data = output.get("data") or {}
    shown = [m for m in data if m != "text/plain"]
    lines = [_text(data["text/plain"])] if "text/plain" in data else []
    if shown:
        lines.append(f"[shown to the person: {', '.join(sorted(shown))}]")
    return "\n".join(lines) + "\n"


_MISSING = re.compile(r"ModuleNotFoundError: No module named '([A-Za-z0-9_.]+)'")


def missing_module_note(module: str) -> str:
    """What the model reads after an import failed: which module, and how a package is
    added (execution/installs.py: the workspace's environment, through the network)."""
    return (f"[the module '{module}' is not installed in this session's Python "
            "environment. `pip install <package>` (in the shell, or `%pip install` in "
            "Python) installs it into the workspace's environment, which the kernel and "
            "the shell share; the package's name may differ from the module's "
            "(sklearn: scikit-learn). Installing reaches the package index's host: the "
            "person must say yes to it first, so ask them before you install.]")


def _missing_in(text: str) -> str | None:
    """The top-level module a process's output says it could not import, if any."""
    found = _MISSING.findall(text)
    return found[-1].split(".")[0] if found else None


def kernel_text(reply: KernelEnd, max_chars: int) -> str:
    """A kernel's run as the model reads it: how it ended, then its outputs, capped."""
    body = "".join(_said(o) for o in reply.outputs).rstrip("\n") or "(no output)"
    body = cut_output(body, max_chars)
    if reply.dropped:
        body += (f"\n[... {reply.dropped:,} more outputs not kept "
                 f"({reply.output_bytes:,} bytes in all)]")
    if reply.missing_module:
        body += "\n" + missing_module_note(reply.missing_module)
    return f"[{kernel_status(reply)}]\n{body}"


class Written(Protocol):
    """A file a run created or changed (execution/written.py's WrittenFile)."""

    @property
    def path(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def created(self) -> bool: ...


WRITTEN_NAMED = 20  # the files a result names; the rest are counted


def written_note(files: Sequence[Written], complete: bool = True) -> str:
    """The files a run created or changed in the workspace, as the model reads them ("" when
    none); `complete`: False when the workspace was too large to look at whole."""
    if not files and complete:
        return ""
    named = ", ".join(f"{f.path} ({f.size:,} bytes{', new' if f.created else ''})"
                      for f in files[:WRITTEN_NAMED])
    more = f" and {len(files) - WRITTEN_NAMED:,} more" if len(files) > WRITTEN_NAMED else ""
    partial = ("" if complete else
               "; the workspace is too large to look at whole: others may have changed")
    if not files:
        return f"[files written in the workspace: none seen{partial}]"
    return f"[files written in the workspace: {named}{more}{partial}]"


def held_skills_note(folders: Sequence[tuple[str, bool]]) -> str:
    """What the model reads after a run that made or changed skills in the workspace's
    skills/ (each folder, and whether it is new): they wait for the person's trust."""
    named = ", ".join(f"{f} ({'new' if new else 'changed'})" for f, new in folders)
    return (f"[skills written: {named}; Lily holds a new or changed skill, not offered "
            "nor usable in this session, until the person trusts it: tell them to run "
            "/trust]")


# What a sandbox's refusal looks like in what a run printed: a write where the sandbox
# keeps files read-only (EROFS, as coreutils, Python and git word it; EBUSY where a file
# is replaced or moved: a protected entry is a mount point), a command absent.
_READ_ONLY = re.compile(
    r"\[Errno (?:30|16)\] (?:Read-only file system|Device or resource busy): "
    r"'(?P<python>[^'\n]{1,300})'"
    r"|(?:['\u2018](?P<quoted>[^'\u2019\n]{1,300})['\u2019]|(?P<bare>[^\s:'\"]{1,300}))"
    r":? ?(?:Read-only file system|Device or resource busy)")
_NOT_FOUND = re.compile(
    r"^(?:[^:\n]*: (?:\d+: )?(?:line \d+: )?)?(?P<name>[^\s:]{1,200}): (?:command )?not found$",
    re.MULTILINE)


def refusal_note(output: str, exit_code: int | None) -> str:
    """One line on what the sandbox refused the run, if its output shows it ("" if not):
    a write to a protected path (read-only in the sandbox), a command that is not there
    (exit code 127). Network refusals are worded with the network policy."""
    notes = []
    found = _READ_ONLY.search(output)
    if found is not None:
        path = found["quoted"] or found["bare"] or found["python"] or "a protected path"
        notes.append(f"[refused by the sandbox: {path} is protected, read-only there (docs: "
                     "Protected paths); write somewhere else in the workspace, or ask the "
                     "person to change it]")
    missing = _NOT_FOUND.search(output)
    if missing is not None or exit_code == 127:
        name = f"'{missing['name']}'" if missing is not None else "a command it ran"
        notes.append(f"[refused by the sandbox: {name} is not installed here or not on "
                     "the sandbox's PATH (exit code 127); use a command that is, or ask "
                     "the person to install it]")
    return "\n".join(notes)
