"""Route each cell: `/` cells to the command layer, everything else to the conversation.

The runtime owns the session's I/O: it applies successful commands' state changes,
writes the event log, and (for conversational turns) calls the model.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from lily_kernel.commands import (
    CommandContext,
    CommandOutcome,
    CommandResult,
    CommandTable,
    Completion,
    ParsedCommand,
    complete,
    inspect,
    parse_command,
    run_command,
)
from lily_kernel.display import Told
from lily_kernel.environment import LilyEnvironment
from lily_kernel.errors import CommandError, LilyError, ModelError
from lily_kernel.events import (
    Cell,
    CellFinished,
    CellStatus,
    Command,
    Event,
    EventLog,
    ModelLoad,
    SessionStarted,
    SkillInvoked,
    SkillLoaded,
    catalog_events,
    recorded_settings,
    session_log_path,
)
from lily_kernel.llm.base import ChatModel
from lily_kernel.llm.records import error_record
from lily_kernel.redaction import Redactor, secret_values
from lily_kernel.runtime.collaborators import Collaborators, SessionRecord, TurnFacts
from lily_kernel.runtime.conversation import ask_again, converse
from lily_kernel.runtime.encoding_notice import announce_encoding
from lily_kernel.runtime.sink import CellSink
from lily_kernel.runtime.trust_flow import (
    ask_trust,
    log_trust_checked,
    needs_trust,
    settle_trust,
    take_up_trust,
    trusted_elsewhere,
)
from lily_kernel.session import Session
from lily_kernel.skills import SkillSnapshot, lily_home
from lily_kernel.tools import ScriptHost, ToolRegistry
from lily_kernel.trust import TrustStore

if TYPE_CHECKING:  # (this imports nothing of this module: no cycle)
    from lily_kernel.runtime.tool_gate import ToolGate

__all__ = ["CellSink", "Collaborators", "LilyRuntime"]


@dataclass
class LilyRuntime:
    """One session and the I/O around it. Two runtimes never share state."""

    env: LilyEnvironment
    session: Session
    log: EventLog
    model: ChatModel | None = None  # created on the first conversational cell
    told: Told = field(default_factory=Told)  # the notices said once a session
    trust_answered: bool = False  # the trust question was put (runtime/trust_flow.py)
    _model_loading: asyncio.Future[ChatModel] | None = None
    collaborators: Collaborators = field(default_factory=Collaborators)
    scripts: ScriptHost = field(init=False)  # how skill scripts run here
    record: SessionRecord | None = None  # the session's record (collaborators.record)
    last_turn: tuple[TurnFacts, int] | None = None  # for /rerun: the turn, its start

    def __post_init__(self) -> None:
        self.scripts = ScriptHost(self.env.host.environ, self.env.config.script_timeout,
                                  run=self.collaborators.run_script,
                                  allowed_env=self.env.config.script_env)

    @cached_property
    def gate(self) -> ToolGate:
        """The session's one gate for tool calls (the model's and tool_dispatch commands')."""
        from lily_kernel.runtime.tool_gate import ToolGate  # with the first tool call

        secrets = secret_values(os.environ) + secret_values(self.env.host.environ)
        return ToolGate(self.env.registry, self.env.policy,
                        replace(self.env.tool_context, scripts=self.scripts), self.log,
                        redact=Redactor(secrets))

    def use_environment(self, env: LilyEnvironment) -> None:
        """Go on with `env`, the same workspace read again (once it was trusted): its
        model from the next chat cell, its policy and script settings from the next
        tool call, its skill vectors from the next snapshot's ranker."""
        self.env = env
        self.session.skill_index.use_meaning(env.skill_vectors)
        model = env.session_model()
        if model != self.session.model_config:
            self.session.model_config, self.model, self._model_loading = model, None, None
        self.scripts.timeout = env.config.script_timeout
        self.scripts.allowed_env = env.config.script_env
        self.__dict__.pop("gate", None)  # the cached gate: built anew with env's policy

    async def get_model(self) -> ChatModel:
        """The session's model, created (litellm imported, or a local model loaded) on
        first use, in a worker thread: the event loop, and so the stop button, stay
        free. An interrupted cell stops waiting; the load goes on for the next cell."""
        if self.model is not None:
            return self.model
        if self._model_loading is None:
            cache = lily_home(self.env.config) / "cache" / "local-model"
            self._model_loading = asyncio.ensure_future(asyncio.to_thread(
                self.collaborators.make_model, self.session.model_config, cache))
        loading = self._model_loading
        try:
            model = await asyncio.shield(loading)
        # Logged, so that replay ends this cell the same way (replay/recorded.py).
        except ModelError as exc:
            self.log.emit(ModelLoad(model=self.session.model_config.model, outcome=exc.kind,
                                    error=error_record(exc)))
            raise
        except asyncio.CancelledError:  # the cell was stopped; the load goes on
            self.log.emit(ModelLoad(model=self.session.model_config.model,
                                    outcome="interrupted"))
            raise
        finally:
            if loading.done() and (loading.cancelled() or loading.exception() is not None):
                self._model_loading = None  # failed: the next cell tries again
        if self.model is None:  # a test may have put its own model in meanwhile
            self.model = model
        return self.model

    def wants_warm_up(self) -> bool:
        """Whether the model path is worth importing ahead of the first chat cell: a
        model is configured (not a scripted one) and it is reached through litellm."""
        from lily_kernel.llm import uses_litellm

        return self.model is None and uses_litellm(self.session.model_config)

    def warm_up(self) -> None:
        """Import what the first model call needs (blocking; call it off the loop)."""
        from lily_kernel.llm import warm_up

        warm_up(self.session.model_config)

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
        env = LilyEnvironment.load(workspace, environ, registry=registry,
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
        runtime = cls(env=env, session=session, log=log,
                      collaborators=collaborators or Collaborators())
        runtime.log.emit(SessionStarted(
            workspace=str(env.workspace),
            agent=session.active_agent,
            model=session.model_config.model,
            persona_files=[f.name for f in session.persona.files],
            settings=recorded_settings(env.host.environ),
        ))
        log_trust_checked(runtime)
        runtime.log_catalog(session.skill_snapshot)
        if runtime.collaborators.record is not None:
            runtime.record = runtime.collaborators.record(runtime)
        return runtime

    # --- events ----------------------------------------------------------------

    def log_catalog(self, snap: SkillSnapshot) -> None:
        for event in catalog_events(snap):
            self.log.emit(event)

    # --- commands --------------------------------------------------------------

    def command_context(self, stop: threading.Event | None = None,
                        sink: CellSink | None = None) -> CommandContext:
        """What a command may use; with the cell's `sink`, the trust question too."""

        async def trust() -> CommandResult:
            assert sink is not None
            return await ask_trust(self, sink)

        return CommandContext(
            session=self.session,
            commands=self.env.commands,
            registry=self.env.registry,
            policy=self.env.policy,
            load_snapshot=self.env.load_snapshot,
            load_persona=self.env.load_persona,
            list_agents=self.env.list_agents,
            held_settings=self.env.trust.held_settings,
            stop=stop,
            trust=trust if sink is not None else None,
            conversations=self.record,
            last_request=self.last_turn[0].text if self.last_turn is not None else None,
        )

    def run_command(self, parsed: ParsedCommand) -> CommandResult:
        """Run one command outside a cell (for scripts and tests); apply its state change
        only when it succeeded. A command that hands over an intent (a skill for the
        model, a tool to run) is returned with it, not carried out: `run_cell` does that."""
        outcome = asyncio.run(run_command(self.command_context(), parsed))
        if outcome.result.dispatch is not None:
            raise CommandError(f"/{parsed.name} runs a tool: run it in a cell (run_cell).")
        return self._finish_command(parsed, outcome)

    def _finish_command(self, parsed: ParsedCommand, outcome: CommandOutcome) -> CommandResult:
        """Log a command's outcome and apply its state change (only when it succeeded)."""
        result = outcome.result
        # What the person was shown, as a digest: replay compares it without the log
        # holding every listing.
        shown = (self.collaborators.shown(result) if result.ok and result.invocation is None
                 and result.ask_again is None else "")
        self.log.emit(Command(
            name=parsed.name, argument=parsed.argument, ok=result.ok, error=result.error,
            output_sha256=hashlib.sha256(shown.encode()).hexdigest() if shown else None,
            output_chars=len(shown) if shown else None))
        if not result.ok:
            return result
        if outcome.change is not None:
            outcome.change.apply(self.session)
            if outcome.change.skill_snapshot is not None:
                self.log_catalog(outcome.change.skill_snapshot)
            if outcome.change.conversation is not None:  # /new, /resume
                self.last_turn = None
                if self.record is not None:
                    self.record.started(outcome.change.conversation)
        if result.skill is not None:
            skill = self.session.skill_snapshot.get(result.skill)
            self.log.emit(SkillInvoked(name=result.skill, mode="manual",
                                       command=result.command))
            if skill is not None and skill.invocation_mode == "prompt_rewrite":
                self.log.emit(SkillLoaded(name=skill.name, path=skill.path,
                                          digest=skill.digest))
        return result

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
                sink.notice(f"The event log is off: {self.log.problem}.")

    async def _run_cell(self, code: str, sink: CellSink, stop: threading.Event,
                        cell_id: str | None) -> None:
        if not code.strip():
            return  # a blank cell does nothing, as in Python kernels
        parsed = parse_command(code)
        if self.env.trust.problem and self.told.first("trust store"):  # once, not every cell
            sink.notice(f"Trust: {self.env.trust.problem}.")
        if trusted_elsewhere(self):  # `lily trust` in a terminal, meanwhile
            take_up_trust(self)
            sink.notice(f"Trusted from elsewhere: what came with {self.env.workspace} "
                        "applies from this cell.")
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
        outcome = await run_command(self.command_context(stop, sink), parsed)
        if outcome.result.dispatch is not None:
            outcome = await self.gate.dispatch(sink, parsed.name, outcome)
        result = self._finish_command(parsed, outcome)
        if result.error is not None:
            raise CommandError(result.error)
        if result.invocation is not None:
            forced = self.session.skill_snapshot.get(result.invocation.skill)
            assert forced is not None  # the command found it in this very snapshot
            await converse(self, TurnFacts(result.invocation.request, forced.name, code,
                                           cell_id), forced, sink, stop)
        elif result.ask_again is not None:
            await ask_again(self, result.ask_again, code, cell_id, sink, stop)
        else:
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
        self.log.close()
