"""Route each cell: `/` cells to the command layer, everything else to the conversation.

The runtime owns the session's I/O: it applies successful commands' state changes,
writes the event log, and (for conversational turns) calls the model.
"""

from __future__ import annotations

import asyncio
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
    CommandResult,
    CommandTable,
    Completion,
    ParsedCommand,
    complete,
    inspect,
    parse_command,
    run_command,
)
from lily_kernel.config import Profile
from lily_kernel.display import Told
from lily_kernel.environment import LilyEnvironment
from lily_kernel.errors import CommandError, LilyError, ModelError
from lily_kernel.events import (
    Cell,
    CellFinished,
    CellStatus,
    Event,
    EventLog,
    ModelLoad,
    PolicyChanged,
    ProfileSetBy,
    SessionStarted,
    catalog_events,
    recorded_settings,
    session_log_path,
)
from lily_kernel.execution.limits import Limits
from lily_kernel.execution.python_host import PythonHost
from lily_kernel.llm.base import ChatModel
from lily_kernel.llm.records import error_record
from lily_kernel.redaction import Redactor, secret_values
from lily_kernel.runtime.collaborators import Collaborators, SessionRecord, TurnFacts
from lily_kernel.runtime.command_flow import command_context, finish_command
from lily_kernel.runtime.conversation import ask_again, converse
from lily_kernel.runtime.encoding_notice import announce_encoding
from lily_kernel.runtime.sink import CellSink
from lily_kernel.runtime.trust_flow import (
    log_trust_checked,
    needs_trust,
    settle_trust,
    take_up_trust,
    trusted_elsewhere,
)
from lily_kernel.session import Session
from lily_kernel.skills import SkillSnapshot, lily_home
from lily_kernel.tools import PolicyState, ScriptHost, ToolRegistry
from lily_kernel.trust import TrustStore

if TYPE_CHECKING:  # (these import nothing of this module: no cycle)
    from lily_kernel.mcp_tools.session import McpServers
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
    scripts: ScriptHost = field(init=False)  # how skill scripts and commands run here
    python: PythonHost = field(init=False)  # the session's Python kernel
    policy_state: PolicyState = field(default_factory=PolicyState)  # the person's choices
    record: SessionRecord | None = None  # the session's record (collaborators.record)
    last_turn: tuple[TurnFacts, int] | None = None  # for /rerun: the turn, its start

    def __post_init__(self) -> None:
        env, config = self.env, self.env.config
        self.scripts = ScriptHost(env.host.environ, config.script_timeout,
                                  run=self.collaborators.run_script,
                                  allowed_env=config.script_env,
                                  limits=Limits(memory_mb=config.memory_limit_mb))
        self.python = PythonHost(env.host.environ, env.workspace, env.tool_context.protected,
                                 self.scripts.sandbox, config.python_kernel,
                                 config.python_timeout, config.script_env,
                                 limits=self.scripts.limits)

    @cached_property
    def gate(self) -> ToolGate:
        """The session's one gate for tool calls (the model's and tool_dispatch commands')."""
        from lily_kernel.runtime.tool_gate import ToolGate  # with the first tool call

        secrets = secret_values(os.environ) + secret_values(self.env.host.environ)
        return ToolGate(self.env.registry, self.env.policy,
                        replace(self.env.tool_context, scripts=self.scripts,
                                python=self.python), self.log,
                        redact=Redactor(secrets), state=self.policy_state)

    @cached_property
    def mcp(self) -> McpServers:
        """The session's MCP servers (none started until a chat cell or `/mcp`)."""
        from lily_kernel.mcp_tools.session import McpServers

        return McpServers(self.env.workspace, self.env.host.environ)

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
        self.scripts.limits = Limits(memory_mb=env.config.memory_limit_mb)
        self.update_profile("configuration", configured=env.config.policy)
        # The Python kernel's settings (a running kernel keeps the ones it started with).
        python = self.python
        python.timeout, python.allowed_env = env.config.python_timeout, env.config.script_env
        python.limits = self.scripts.limits
        self.__dict__.pop("gate", None)  # the cached gate: built anew with env's policy

    def update_profile(self, by: ProfileSetBy, **change: Profile) -> None:
        """A new configured or chosen policy profile; the one in force, when it changes,
        is a `policy_profile` event (replay runs into the same)."""
        if self.policy_state.update(**change):
            self.log.emit(PolicyChanged(profile=self.policy_state.profile, by=by))

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
        runtime.update_profile("configuration", configured=env.config.policy)
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

    def run_command(self, parsed: ParsedCommand) -> CommandResult:
        """Run one command outside a cell (for scripts and tests); apply its state change
        only when it succeeded. A command that hands over an intent (a skill for the
        model, a tool to run) is returned with it, not carried out: `run_cell` does that."""
        outcome = asyncio.run(run_command(command_context(self), parsed))
        if outcome.result.dispatch is not None:
            raise CommandError(f"/{parsed.name} runs a tool: run it in a cell (run_cell).")
        return finish_command(self, parsed, outcome)

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
        outcome = await run_command(command_context(self, stop, sink), parsed)
        if outcome.result.dispatch is not None:
            outcome = await self.gate.dispatch(sink, parsed.name, outcome)
        result = finish_command(self, parsed, outcome)
        if result.error is not None:
            raise CommandError(result.error)
        if result.invocation is not None:
            forced = self.session.skill_snapshot.get(result.invocation.skill)
            assert forced is not None  # the command found it in this very snapshot
            await converse(self, TurnFacts(result.invocation.request, forced.name, code,
                                           cell_id), forced, sink, stop)
        elif result.ask_again is not None:
            await ask_again(self, result.ask_again, code, cell_id, sink, stop)
        elif result.title or result.blocks or result.notices:  # (/python shows its run)
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
        if "mcp" in self.__dict__:  # servers were (or may have been) started
            self.mcp.close()
        self.python.close()
        self.log.close()
