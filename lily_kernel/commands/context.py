"""What a command may use: the session, the tools and policy, and loaders to call back."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from lily_kernel.commands.results import CommandResult
from lily_kernel.persona import Persona
from lily_kernel.session import Session
from lily_kernel.skills import SkillSnapshot
from lily_kernel.tools import ToolPolicy, ToolRegistry

__all__ = ["CommandContext", "CommandOutcome", "StateChange"]


@dataclass(frozen=True)
class CommandContext:
    """Read-only inputs of a command. Loaders do I/O; commands never touch the session.

    `load_snapshot(version)` rebuilds skills from disk; `load_persona(agent)` reads an
    agent; `list_agents()` lists them. The runtime supplies all three, and `stop`, which
    it sets when the cell is stopped (a ranking then stops encoding skills).
    """

    session: Session
    registry: ToolRegistry
    policy: ToolPolicy
    load_snapshot: Callable[[int], SkillSnapshot]
    load_persona: Callable[[str], Persona]
    list_agents: Callable[[], list[str]]
    # lily.yaml settings not applied while the workspace is not trusted (/help says so).
    held_settings: tuple[str, ...] = ()
    stop: threading.Event | None = None


@dataclass(frozen=True)
class StateChange:
    """The session fields a successful command replaces (None = unchanged)."""

    skill_snapshot: SkillSnapshot | None = None
    active_agent: str | None = None
    persona: Persona | None = None

    def apply(self, session: Session) -> None:
        if self.skill_snapshot is not None:
            session.skill_snapshot = self.skill_snapshot
        if self.persona is not None and self.active_agent is not None:
            session.active_agent = self.active_agent
            session.persona = self.persona


@dataclass(frozen=True)
class CommandOutcome:
    """What a command produced, and the session change to apply if it succeeded."""

    result: CommandResult
    change: StateChange | None = None
