"""What a tool handler receives besides its arguments: one small context per call.

A handler never reaches into the runtime: what it may legitimately use comes in here,
the workspace and Lily's own files, the active skill, the person (`ask`), the event
log (`emit`), the session's services (how scripts and Python run on this host), and the
request's skill selection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from lily_kernel.errors import ToolError, ToolRefusedError

if TYPE_CHECKING:  # events load with the first tool call, not with `lily skills`
    from lily_kernel.display import Shown
    from lily_kernel.events import Caller, EventData
    from lily_kernel.execution.python_host import PythonHost
    from lily_kernel.execution.runner import ScriptHost

__all__ = ["ActiveSkill", "Ask", "Hosts", "Question", "SkillSelector", "ToolContext",
           "ToolServices"]


def _unchanged() -> str | None:
    return None


@dataclass(frozen=True)
class ActiveSkill:
    """The skill active in the current request: the folder its own tools work in;
    `changed`: why its files may no longer be used (a workspace skill changed on disk
    since the person trusted it), or None; asked before any of them is read or run; and
    `commands`: the command patterns its `allowed-tools` narrows the shell to (None:
    any; tools/command_rules.py)."""

    name: str
    folder: Path
    changed: Callable[[], str | None] = _unchanged
    commands: tuple[str, ...] | None = None

    def check(self) -> None:
        """Raise ToolRefusedError when the skill's files changed since it was trusted."""
        why = self.changed()
        if why is not None:
            raise ToolRefusedError(why)


@dataclass(frozen=True)
class Question:
    """A call put to the person: the question they read, the action it would take
    (`running scripts/fill.py of skill 'pdf'`), which names the call when it is refused,
    and what exactly was shown (`subject`: e.g. the script's plan), for the handler;
    `always`: this call is asked whatever the policy says, and `text` says why;
    `unshowable`: why `text` cannot show the call whole (code too long to read): where
    the person would be asked, the call is refused instead."""

    text: str
    action: str
    subject: object = None
    always: bool = False  # asked whatever the policy says (a write over a notebook)
    unshowable: str | None = None


class Ask(Protocol):
    async def __call__(self, question: Question) -> bool:
        """True when the person said yes, False when they said no; raises ToolRefusedError
        when no one can answer (a frontend without stdin: nbclient, papermill)."""
        ...


class SkillSelector(Protocol):
    def select(self, name: str) -> str:
        """Make `name` the request's one skill; what the model reads then (its SKILL.md).
        Raises ToolRefusedError when it may not be selected."""
        ...


class ToolServices(Protocol):
    """The session's services a tool may use, each made on first use
    (runtime/services.py); None: not here."""

    @property
    def scripts(self) -> ScriptHost | None:
        """How skill scripts and shell commands run."""
        ...

    @property
    def python(self) -> PythonHost | None:
        """The session's Python kernel."""
        ...


@dataclass(frozen=True)
class Hosts:
    """Services given as they are (a tool run on its own, a test's)."""

    scripts: ScriptHost | None = None
    python: PythonHost | None = None


async def _no_one_to_ask(question: Question) -> bool:
    """The `ask` of a context outside a session: there is no one at all."""
    raise ToolRefusedError(f"no one can approve {question.action} here")


def _nowhere(event: EventData) -> None:
    """Events of a context that logs nothing (a test's, or a tool run on its own)."""


def _unseen(item: Shown) -> None:
    """What a context outside a cell shows: nothing."""


def _untold() -> None:
    """A context outside a session has no skills to read again."""


@dataclass(frozen=True)
class ToolContext:
    """What a handler may use. `workspace`: where the file tools are confined;
    `protected`: Lily's own files and folders (configuration, every skills root,
    persona, the Lily home, `.lily`), inside the workspace or not, which no tool may
    write; `skill`: the active skill (None outside a skill); `ask`: a yes/no question to
    the person; `emit`: an event for the session log; `services`: the session's (how
    skill scripts and Python run here; None: they cannot); `show`: code that runs, its
    outputs and what else a run shows (the files it wrote), to the cell (display/runs.py);
    `caller`: who made the call (`model`, or `owner`: the person's command); `skills`:
    the request's skill selection (None: no selection is open, e.g. a command's tool
    call); `prepared`: the call as it was made ready (`Tool.prepare`) and, where someone
    was asked, approved: its subject is what the handler does. `runs_write`: those of
    `protected` that runs (a shell command, a skill's script, Python) may write: the
    workspace's skills folder, whose new and changed skills wait for the person's trust
    (docs/skills.md, "Trust"); the file tools still may not. `skills_written`: told
    when a run wrote there (the session reads its skills again before its next cell)."""

    workspace: Path
    protected: tuple[Path, ...] = ()
    skill: ActiveSkill | None = None
    ask: Ask = _no_one_to_ask
    emit: Callable[[EventData], object] = _nowhere
    services: ToolServices | None = None
    show: Callable[[Shown], None] = _unseen
    caller: Caller = "model"
    skills: SkillSelector | None = None
    prepared: Question | None = None
    runs_write: tuple[Path, ...] = ()
    skills_written: Callable[[], None] = _untold

    @property
    def run_protected(self) -> tuple[Path, ...]:
        """Lily's own paths a run may not write (the sandbox keeps them read-only)."""
        return tuple(p for p in self.protected if p not in self.runs_write)

    def host(self) -> ScriptHost:
        """How code runs here (skill scripts, commands); ToolError where it cannot: a
        context outside a session."""
        scripts = self.services.scripts if self.services is not None else None
        if scripts is None:
            raise ToolError("code cannot run here (no session runs it).")
        return scripts
