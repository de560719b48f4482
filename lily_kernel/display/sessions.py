"""What the person reads in the cell about the shell's session sandbox: what a command
left running there (one line), and the sandbox started anew before a command (why, and
what was ended with it). The processes are named as the model reads them
(prompting/sessions.py)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ended_with_cell", "left_running", "sandbox_replaced"]


def left_running(processes: Sequence[tuple[int, str]], count: int) -> str:
    from lily_kernel.prompting.sessions import named_processes

    return (f"Left running in the shell's sandbox: {named_processes(processes, count)} "
            "(until this cell ends).")


def sandbox_replaced(why: Sequence[str], changed: Sequence[str],
                     processes: Sequence[tuple[int, str]], count: int) -> str:
    from lily_kernel.prompting.sessions import named_processes, replaced_reason

    return (f"The shell's sandbox was started anew ({replaced_reason(why, changed)}); "
            f"ended what ran there: {named_processes(processes, count)}.")


def ended_with_cell(processes: Sequence[tuple[int, str]], count: int) -> str:
    """What the cell's commands left running, ended with the cell's turn."""
    from lily_kernel.prompting.sessions import named_processes

    return f"Ended with this cell: {named_processes(processes, count)}."
