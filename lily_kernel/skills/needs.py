"""What running a skill takes: the code it tells the agent to run.

A model that cannot call tools (the embedded one) can only describe such a skill's work;
the turn says so in one line instead of letting a description pass for the work
(docs/execution.md, "Models that cannot run code"). What a skill needs is read from what
it declares (`requires_tools`, `allowed-tools`) and from its instructions: a fenced block
of Python or of shell commands is code the agent is meant to run (```bash, ```python),
and so is a command line, in an unlabelled block or a code span, that begins with a
program skills tell agents to run (`git status`, `python scripts/x.py`, `npm test`).
A program named alone (`git`) is prose; so are unlabelled blocks of anything else
(output, file layouts).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from lily_kernel.skills.fields import ANY_COMMAND

__all__ = ["EXECUTION_TOOLS", "execution_needs"]

EXECUTION_TOOLS = ("python", "shell")
_LANGUAGES = {
    "python": "python", "py": "python", "python3": "python", "ipython": "python",
    "pycon": "python",
    "bash": "shell", "sh": "shell", "shell": "shell", "console": "shell", "zsh": "shell",
    "shell-session": "shell", "powershell": "shell",
}
# A fence opening: three or more backticks or tildes, then the block's language.
_FENCE = re.compile(r"^[ \t]{0,3}(?:`{3,}|~{3,})[ \t]*([A-Za-z0-9_+-]+)", re.MULTILINE)
# An unlabelled block's lines, and code spans.
_PLAIN_BLOCK = re.compile(r"^[ \t]{0,3}`{3,}[ \t]*\n(.*?)^[ \t]{0,3}`{3,}", re.MULTILINE | re.DOTALL)
_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
# A command line: an optional prompt, then a program and at least one argument.
_PYTHON = re.compile(r"^(?:\$ )?(?:python3?|uv run|pip3? install|pytest|jupyter) \S")
_SHELL = re.compile(r"^(?:\$ )?(?:git|gh|npm|npx|pnpm|yarn|node|make|cargo|go|docker|"
                    r"kubectl|curl|wget|tmux|brew|apt-get|bash|sh|ls|cat|grep|find|mkdir|"
                    r"cd|cp|mv|rm|chmod|tar|unzip|ffmpeg|jq|sed|awk) \S")


def execution_needs(body: str, requires_tools: Iterable[str] = (),
                    narrowed: Iterable[str] | None = None) -> tuple[str, ...]:
    """The execution tools (`python`, `shell`) a skill needs, in that order: those it
    requires, those its `allowed-tools` names (`narrowed`: lower-case names, `bash` for
    the shell), and those whose code its SKILL.md `body` shows in fenced blocks."""
    needs = {t for t in requires_tools if t in EXECUTION_TOOLS}
    named = set(narrowed or ())
    if "python" in named:
        needs.add("python")
    if named & {"bash", "shell", ANY_COMMAND}:
        needs.add("shell")
    for match in _FENCE.finditer(body):
        tool = _LANGUAGES.get(match.group(1).lower())
        if tool is not None:
            needs.add(tool)
    lines = [line.strip() for block in _PLAIN_BLOCK.findall(body)
             for line in block.splitlines()]
    lines += [span.strip() for span in _SPAN.findall(body)]
    for line in lines:
        if _PYTHON.match(line):
            needs.add("python")
        elif _SHELL.match(line):
            needs.add("shell")
    return tuple(t for t in EXECUTION_TOOLS if t in needs)
