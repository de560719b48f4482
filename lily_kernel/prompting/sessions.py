"""What the model reads about the shell's session sandbox (execution/shell_session.py):
what a command left running there, the sandbox replaced before a command (why, and what
was ended with it), a sandbox that could not start. Pure: facts in, text out (processes
as (pid, command line) pairs, as the sandbox reports them)."""

from __future__ import annotations

from collections.abc import Sequence

from lily_kernel.visible import shown

__all__ = [
    "left_running_note",
    "named_processes",
    "replaced_note",
    "replaced_reason",
    "session_not_started",
]

NAMED = 5  # processes named in a note; the rest counted
# Why the sandbox was replaced, by the name execution/shell_session.py gives it.
_WHY = {"ended": "it had ended",
        "environment": "the variables commands get changed",
        "limits": "the limits of runs changed",
        "network": "the network's way out changed",
        "protected": "Lily's protected paths changed",
        "python": "the Python environment changed",
        "bwrap": "bubblewrap changed",
        "workspace": "the workspace changed"}


def named_processes(processes: Sequence[tuple[int, str]], count: int) -> str:
    """`tmux new-session -d -s work (pid 12), … and N more processes`."""
    named = ", ".join(f"{shown(name, 80)} (pid {pid})" for pid, name in processes[:NAMED])
    more = count - min(len(processes), NAMED)
    if more > 0:
        named += f" and {more} more process{'es' if more > 1 else ''}"
    return named


def replaced_reason(why: Sequence[str], changed: Sequence[str]) -> str:
    """Why the sandbox was started anew, in a few words."""
    return "; ".join(
        f"{', '.join(changed)} changed in the workspace where the sandbox protects it"
        if reason == "outgrown" else _WHY.get(reason, reason) for reason in why)


def left_running_note(processes: Sequence[tuple[int, str]], count: int) -> str:
    """What a command left running in the session's sandbox ("" when nothing)."""
    if count <= 0:
        return ""
    return (f"[left running in the session's shell sandbox: {named_processes(processes, count)}; "
            "the next commands of this turn share it (the same /tmp, processes and "
            "127.0.0.1); it ends when this turn ends (the person's cell); `kill PID` "
            "ends one sooner]")


def replaced_note(why: Sequence[str], changed: Sequence[str],
                  processes: Sequence[tuple[int, str]], count: int) -> str:
    """The sandbox started anew before this command, ending what ran there ("" when
    nothing ran there)."""
    if count <= 0:
        return ""
    return (f"[the shell's sandbox was started anew before this command "
            f"({replaced_reason(why, changed)}): what ran there was ended: "
            f"{named_processes(processes, count)}]")


def session_not_started(why: str) -> str:
    return f"the shell's sandbox could not start: {why.rstrip('.')}."
