"""How a tool call is put to the person for approval: the question's wording.

What will happen comes first and whole: whether a script is sandboxed, then the tool
and what it acts on (the script, or a `path`), then the other values. Every value is
shown with control characters and escapes made visible (a newline is `\\n`, an ANSI
escape `\\x1b`), a long one shortened in the middle with its full length stated, and
the question is never more than a few lines, whatever the model sent. A shell command
is shown whole (tools/shell.py bounds its length instead), on one line, escaped alike.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lily_kernel.tools.context import Question
from lily_kernel.visible import MAX_SHOWN, shown, visible

if TYPE_CHECKING:  # the runner loads with the first run
    from lily_kernel.execution.runner import ScriptPlan

__all__ = ["ALWAYS", "MAX_CODE_CHARS", "MAX_CODE_LINE", "MAX_SHOWN", "YES_NO", "call_question",
           "code_refusal", "offering_always", "python_question", "script_question",
           "shell_question", "shown"]

MAX_VALUES = 4  # values shown besides the first; the rest are counted
YES_NO = "[y/N] "  # how every tool question ends
ALWAYS = frozenset({"a", "always"})  # yes, and for the rest of the session
# Keys that say what a call acts on: shown first.
_TARGETS = ("path", "file", "script", "target", "url", "name")


def script_question(plan: ScriptPlan) -> str:
    """Sandbox status first, then the script and its skill, then its arguments."""
    # Said because an approved script did plant user skills: unsandboxed, Lily's own
    # files are the person's files like any other.
    status = ("Sandboxed" if plan.sandboxed else
              f"NOT sandboxed ({plan.sandbox_note}): it runs with your permissions, "
              "network and files, can read this kernel's environment (API keys), and can "
              "change Lily's own skills and settings for later sessions")
    args = plan.arguments
    listed = ", ".join(shown(a, MAX_SHOWN // 2) for a in args[:MAX_VALUES])
    more = f" and {len(args) - MAX_VALUES} more" if len(args) > MAX_VALUES else ""
    return (f"{status}. Run {shown(plan.script)} of skill {shown(plan.skill)}\n"
            f"  with {f'arguments {listed}{more}' if args else 'no arguments'}\n"
            f"Run it? {YES_NO}")


def shell_question(command: str, workspace: str) -> str:
    """The sandbox and the workspace first, then the command line whole."""
    return (f"Sandboxed (network only to hosts you allow; only the workspace "
            f"{shown(workspace)} writable). "
            "Run with /bin/sh:\n"
            f"  {shown(command, len(command) * 10 + 10)}\n"
            f"Run it? {YES_NO}")


def offering_always(question: Question, tool: str) -> Question:
    """The question with a third answer, `a`: yes, and the tool runs unasked for the
    rest of the session (offered where the policy asks: tools/policy.py)."""
    *lines, last = question.text.split("\n")
    lines.append(f"  (a: yes, and run {shown(tool)} without asking for the rest of this "
                 "session)")
    lines.append(last.replace(YES_NO, "[y/N/a] "))
    return replace(question, text="\n".join(lines))


MAX_CODE_CHARS = 20_000  # Python the question shows whole: longer code is refused
MAX_CODE_LINE = 1_000  # and so is a line the question box would push out of sight
_BLANK_RUN = re.compile(r"[ \t]{32,}")


def code_refusal(code: str) -> str | None:
    """Why `code` cannot be put to the person as a question (they would not see all of
    it), or None. Where the policy runs it unasked, it runs (and shows in the cell)."""
    if len(code) > MAX_CODE_CHARS:
        return (f"the code is {len(code):,} characters long; at most {MAX_CODE_CHARS:,} "
                "(write data to a file first, or run it in parts).")
    longest = max((len(line) for line in code.splitlines()), default=0)
    if longest > MAX_CODE_LINE:
        return (f"a line of the code is {longest:,} characters long; at most "
                f"{MAX_CODE_LINE:,} (split it, or write data to a file first).")
    return None


def _blanks(match: re.Match[str]) -> str:
    return f"[{len(match.group()):,} blanks]"


def python_question(code: str, kernel: str, workspace: Path) -> str:
    """The code whole, every line as it is with what is invisible made visible (a run
    of 32 or more blanks as its count: nothing hides beyond them), under where it runs:
    the sandbox, the kernel, the working folder. `code_refusal` bounds its size."""
    lines = [_BLANK_RUN.sub(_blanks, visible(line)) for line in code.splitlines()] or [""]
    body = "\n".join(f"  | {line}" for line in lines)
    return (f"Sandboxed Python (network only to hosts you allow; only the workspace is "
            f"writable), in the kernel {shown(kernel)}, working folder "
            f"{shown(str(workspace))}:\n{body}\n"
            f"Run it? {YES_NO}")


def call_question(name: str, arguments: dict[str, Any]) -> Question:
    """The question for a tool with no question of its own: the tool and what it acts
    on first, then its other arguments, each shortened, on a few lines."""
    keys = sorted(arguments, key=lambda k: (k not in _TARGETS, _TARGETS.index(k)
                                            if k in _TARGETS else 0, str(k)))
    lines = [f"Let the model run the tool {shown(name)}"]
    lines += [f"  {shown(key, 40)[1:-1]}: {shown(arguments[key])}" for key in keys[:MAX_VALUES]]
    if len(keys) > MAX_VALUES:
        lines.append(f"  and {len(keys) - MAX_VALUES} more argument(s)")
    lines.append(f"Allow it? {YES_NO}")
    return Question("\n".join(lines), f"the call of '{name}'")
