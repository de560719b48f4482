"""Route each cell: `/` cells to the command layer, everything else to the conversation.

The runtime owns the session's I/O: it carries out commands' intents and applies their
state changes when they succeeded (command_flow.py), writes the event log, and (for
conversational turns) calls the model.
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from lily_kernel.commands import (
    CommandResult,
    CommandTable,
    Completion,
    ParsedCommand,
    complete,
    inspect,
    parse_command,
    run_command,
)
from lily_kernel.display import Notice
from lily_kernel.display.notices import (
    event_log_off,
    trust_store_problem,
    trusted_from_elsewhere,
)
from lily_kernel.environment import Workspace
from lily_kernel.errors import CommandError, LilyError
from lily_kernel.events import (
    Cell,
    CellFinished,
    CellStatus,
    Event,
    EventLog,
    SessionStarted,
    recorded_settings,
    session_log_path,
)
from lily_kernel.redaction import Redactor, secret_values
from lily_kernel.runtime.collaborators import Collaborators, TurnFacts
from lily_kernel.runtime.command_flow import CommandCell, carry_out, command_context
from lily_kernel.runtime.conversation import converse, record_opening
from lily_kernel.runtime.core import RuntimeCore
from lily_kernel.runtime.encoding_notice import announce_encoding
from lily_kernel.runtime.sink import CellSink
from lily_kernel.runtime.state import SessionState
from lily_kernel.runtime.trust_flow import (
    log_trust_checked,
    needs_trust,
    reread_written_skills,
    settle_trust,
    take_up_trust,
    trusted_elsewhere,
)
from lily_kernel.tools import ToolRegistry
from lily_kernel.trust import TrustStore

__all__ = ["CellSink", "Collaborators", "LilyRuntime"]


@dataclass
class LilyRuntime(RuntimeCore):
    """One session and the I/O around it (its three values: runtime/core.py), cell by
    cell. Two runtimes never share state."""

    @classmethod
    def start(
        cls,
        workspace: Path,
        environ: Mapping[str, str] | None = None,
        *,
        registry: ToolRegistry | None = None,
        commands: CommandTable | None = None,
        session_id: str | None = None,
        listener: Callable[[Event], None] | None = None,
        write_log: bool = True,
        trust_store: TrustStore | None = None,
        collaborators: Collaborators | None = None,
    ) -> LilyRuntime:
        """Load config, skills and persona; open the log. Raises ConfigError/SkillRootError.
        `registry` and `commands`: the session's tools and commands (the built-in ones
        unless given); `listener` sees every event; `write_log` False keeps the log off
        disk (replay), which also keeps its trust in memory (`trust_store`);
        `collaborators` make the model, run scripts and read what commands show (Lily's
        own unless given)."""
        env = Workspace.load(workspace, environ, registry=registry,
                             trust_store=trust_store, commands=commands)
        session_id = session_id or uuid.uuid4().hex
        created = datetime.now(UTC).isoformat(timespec="seconds")
        session = env.new_session(session_id, created)
        path = (session_log_path(env.workspace, session_id)
                if env.config.event_log and write_log else None)
        # Credentials of the process and of the settings' environment never reach the log.
        secrets = secret_values(os.environ) + secret_values(environ or {})
        log = EventLog(path, session_id, redact=Redactor(secrets).data, listener=listener,
                       inside=env.workspace)
        runtime = cls(env=env, state=SessionState(session), log=log,
                      collaborators=collaborators or Collaborators())
        runtime.log.emit(SessionStarted(
            workspace=str(env.workspace),
            agent=session.active_agent,
            model=session.model_config.model,
            persona_files=[f.name for f in session.persona.files],
            settings=recorded_settings(env.host.environ),
        ))
        runtime.update_profile("configuration", configured=env.config.policy)
        log_trust_checked(runtime)
        runtime.log_catalog(session.skill_snapshot)
        if runtime.collaborators.record is not None:
            runtime.record = runtime.collaborators.record(record_opening(runtime),
                                                          runtime.log.emit)
        return runtime

    # --- commands --------------------------------------------------------------

    def run_command(self, parsed: ParsedCommand) -> CommandResult:
        """Run one command outside a cell (for scripts and tests); apply its state change
        only when it succeeded. A command that hands over an intent (a skill for the
        model, a tool to run) is returned with it, not carried out: `run_cell` does that."""

        async def run() -> CommandResult:
            outcome = await run_command(command_context(self), parsed)
            return await carry_out(self, parsed, outcome, None)

        return asyncio.run(run())

    # --- cells -----------------------------------------------------------------

    async def run_cell(self, code: str, sink: CellSink, cell_id: str | None = None) -> None:
        """Run a cell (`cell_id`: the front end's name for it, if it sent one); user
        errors raise LilyError subclasses with the exact message."""
        self.log.emit(Cell(code=code, cell_id=cell_id))
        status: CellStatus = "error"
        error: str | None = None
        # Set when the cell is stopped: its worker threads go on, so a ranking that
        # encodes skills is told to stop after the chunk in progress.
        stop = threading.Event()
        try:
            await self._run_cell(code, sink, stop, cell_id)
            status = "ok"
        except asyncio.CancelledError:
            stop.set()
            status = "interrupted"
            raise
        except LilyError as exc:
            error = str(exc)
            raise
        except Exception as exc:  # a bug: recorded by name, the kernel shows the traceback
            error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self.log.emit(CellFinished(status=status, error=error))
            if self.log.problem and self.told.first("event log"):  # once, not every cell
                sink.show(Notice(event_log_off(self.log.problem)))

    async def _run_cell(self, code: str, sink: CellSink, stop: threading.Event,
                        cell_id: str | None) -> None:
        if not code.strip():
            return  # a blank cell does nothing, as in Python kernels
        parsed = parse_command(code)
        if self.env.trust.problem and self.told.first("trust store"):  # once, not every cell
            sink.show(Notice(trust_store_problem(self.env.trust.problem)))
        reread_written_skills(self)  # a run made or changed skills: held until trusted
        if trusted_elsewhere(self):  # `lily trust` in a terminal, meanwhile
            applied = take_up_trust(self)
            sink.show(Notice(trusted_from_elsewhere(self.env.workspace, applied)))
        if needs_trust(self, parsed):
            await settle_trust(self, sink)
        if parsed is None:
            await converse(self, TurnFacts(code, None, code, cell_id), None, sink, stop)
            return
        command = self.env.commands.get(parsed.name)
        if command is not None and command.ranks and parsed.argument:
            await announce_encoding(self.session.ranker(), sink, self.session.held_ranker())
        # A handler doing file-system work runs off the event loop (a reload can read
        # thousands of files), so an interrupt can cancel this await; its state change
        # is applied here afterwards, never by a cancelled cell.
        outcome = await run_command(command_context(self, stop, in_cell=True), parsed)
        result = await carry_out(self, parsed, outcome, CommandCell(code, cell_id, sink, stop))
        if result.error is not None:
            raise CommandError(result.error)
        if result.title or result.blocks or result.notices:  # (/python shows its run)
            sink.show(result)

    # --- completion and inspection -----------------------------------------------

    def complete(self, code: str, cursor: int) -> Completion:
        """Tab completion of a command cell, from this session's snapshot and agents."""
        return complete(code, cursor, self.session.skill_snapshot, self.env.list_agents(),
                        self.env.commands)

    def inspect(self, code: str, cursor: int) -> CommandResult | None:
        """Shift-Tab: the help of the skill under the cursor, if any."""
        return inspect(code, cursor, self.session.skill_snapshot, self.env.commands)

    def close(self) -> None:
        self.services.close()
        self.log.close()
