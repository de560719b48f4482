"""Route each cell: `/` cells to the command layer, everything else to the conversation.

The runtime owns the session's I/O: it applies successful commands' state changes,
writes the event log, and (for conversational turns) calls the model.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from lily_kernel.commands import (
    CommandContext,
    CommandOutcome,
    CommandResult,
    Completion,
    ParsedCommand,
    complete,
    inspect,
    parse_command,
    render_plain,
    run_command,
)
from lily_kernel.errors import CommandError, LilyError, ModelError
from lily_kernel.events import Event, EventLog, session_log_path
from lily_kernel.llm.base import ChatModel
from lily_kernel.persona import Persona
from lily_kernel.redaction import Redactor, is_secret_name, secret_values
from lily_kernel.runtime.environment import LilyEnvironment
from lily_kernel.runtime.replay_records import error_record
from lily_kernel.session import Session
from lily_kernel.skills import Skill, SkillSnapshot, lily_home
from lily_kernel.tools import ToolRegistry
from lily_kernel.tools.scripts import Sandbox, find_sandbox, run_script

__all__ = ["CellSink", "LilyRuntime"]


class CellSink(Protocol):
    """Where a cell's output goes (the kernel adapter, or a test's recorder)."""

    def show(self, result: CommandResult) -> None: ...

    def stream(self, markdown: str) -> None:
        """The reply so far, while it streams."""

    def reply(self, markdown: str, footer: str | None = None) -> None:
        """The finished reply, and a quiet one-line footer under it (None: none)."""

    def notice(self, text: str) -> None: ...

    async def ask(self, prompt: str) -> str | None:
        """The person's answer to a yes/no question (Jupyter's input request); None
        when no one can answer (nbclient, papermill, a frontend without stdin)."""


def recorded_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """The LILY_* variables of the session (what replay needs to rebuild its config);
    never one whose name looks like a credential."""
    return {k: v for k, v in sorted(environ.items())
            if k.startswith("LILY_") and not is_secret_name(k)}


@dataclass
class LilyRuntime:
    """One session and the I/O around it. Two runtimes never share state."""

    env: LilyEnvironment
    session: Session
    log: EventLog
    model: ChatModel | None = None  # created on the first conversational cell
    persona_told: Persona | None = None  # whose notices the person has seen
    log_problem_told: bool = False
    model_told: bool = False  # the person was told the embedded model answers
    _model_loading: asyncio.Future[ChatModel] | None = None
    # Runs an approved skill script; replay swaps in the recorded results.
    script_runner: Callable[..., Any] = field(default=run_script)
    # Makes the session's model (in a worker thread); replay swaps in the recorded loads.
    model_loader: Callable[[], ChatModel] | None = None
    _sandbox: Sandbox | None = None

    def sandbox(self) -> Sandbox:
        """bubblewrap as this machine offers it (looked for once per session)."""
        if self._sandbox is None:
            self._sandbox = find_sandbox(self.env.host.environ)
        return self._sandbox

    async def get_model(self) -> ChatModel:
        """The session's model, created (litellm imported, or a local model loaded) on
        first use, in a worker thread: the event loop, and so the stop button, stay
        free. An interrupted cell stops waiting; the load goes on for the next cell."""
        if self.model is not None:
            return self.model
        if self._model_loading is None:
            self._model_loading = asyncio.ensure_future(
                asyncio.to_thread(self.model_loader or self._create_model))
        loading = self._model_loading
        try:
            model = await asyncio.shield(loading)
        # Logged, so that replay ends this cell the same way (runtime/replay.py).
        except ModelError as exc:
            self.log.emit("model_load", model=self.session.model_config.model,
                          outcome=exc.kind, error=error_record(exc))
            raise
        except asyncio.CancelledError:  # the cell was stopped; the load goes on
            self.log.emit("model_load", model=self.session.model_config.model,
                          outcome="interrupted")
            raise
        finally:
            if loading.done() and (loading.cancelled() or loading.exception() is not None):
                self._model_loading = None  # failed: the next cell tries again
        if self.model is None:  # a test may have put its own model in meanwhile
            self.model = model
        return self.model

    def _create_model(self) -> ChatModel:
        from lily_kernel.llm import create_model

        cache = lily_home(self.env.config) / "cache" / "local-model"
        return create_model(self.session.model_config, cache)

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
        session_id: str | None = None,
        listener: Callable[[Event], None] | None = None,
        write_log: bool = True,
    ) -> LilyRuntime:
        """Load config, skills and persona; open the log. Raises ConfigError/SkillRootError.
        `listener` sees every event; `write_log` False keeps the log off disk (replay)."""
        env = LilyEnvironment.load(workspace, environ, registry=registry)
        session_id = session_id or uuid.uuid4().hex
        created = datetime.now(UTC).isoformat(timespec="seconds")
        session = env.new_session(session_id, created)
        path = (session_log_path(env.workspace, session_id)
                if env.config.event_log and write_log else None)
        # Credentials of the process and of the settings' environment never reach the log.
        secrets = secret_values(os.environ) + secret_values(environ or {})
        log = EventLog(path, session_id, redact=Redactor(secrets).data, listener=listener)
        runtime = cls(env=env, session=session, log=log)
        runtime.log.emit(
            "session_started",
            workspace=str(env.workspace),
            agent=session.active_agent,
            model=session.model_config.model,
            persona_files=[f.name for f in session.persona.files],
            settings=recorded_settings(env.host.environ),
        )
        runtime._log_catalog(session.skill_snapshot)
        return runtime

    # --- events ----------------------------------------------------------------

    def _log_catalog(self, snap: SkillSnapshot) -> None:
        self.log.emit(
            "skill_catalog_updated",
            version=snap.version,
            count=len(snap.skills),
            roots=[{"source": r.source, "path": r.path, "exists": r.exists} for r in snap.roots],
            digest=snap.digest,
            shadowed=[d.skill for d in snap.diagnostics if d.kind.value == "shadowed"],
        )
        for diag in snap.diagnostics:
            self.log.emit("skill_warning", name=diag.skill, kind=diag.kind.value,
                          detail=diag.reason, path=diag.path)

    # --- commands --------------------------------------------------------------

    def command_context(self) -> CommandContext:
        return CommandContext(
            session=self.session,
            registry=self.env.registry,
            policy=self.env.policy,
            tool_context=self.env.tool_context,
            load_snapshot=self.env.load_snapshot,
            load_persona=self.env.load_persona,
            list_agents=self.env.list_agents,
        )

    def run_command(self, parsed: ParsedCommand) -> CommandResult:
        """Run one command; apply its state change only when it succeeded."""
        return self._finish_command(parsed, run_command(self.command_context(), parsed))

    def _finish_command(self, parsed: ParsedCommand, outcome: CommandOutcome) -> CommandResult:
        """Log a command's outcome and apply its state change (only when it succeeded)."""
        result = outcome.result
        # What the person was shown, as a digest: replay compares it without the log
        # holding every listing.
        shown = render_plain(result) if result.ok and result.invocation is None else ""
        output = ({"output_sha256": hashlib.sha256(shown.encode()).hexdigest(),
                   "output_chars": len(shown)} if shown else {})
        self.log.emit("command", name=parsed.name, argument=parsed.argument,
                      ok=result.ok, error=result.error, **output)
        if not result.ok:
            return result
        if outcome.change is not None:
            outcome.change.apply(self.session)
            if outcome.change.skill_snapshot is not None:
                self._log_catalog(outcome.change.skill_snapshot)
        if result.skill is not None:
            skill = self.session.skill_snapshot.get(result.skill)
            self.log.emit("skill_invoked", name=result.skill, mode="manual",
                          command=result.command)
            if skill is not None and skill.invocation_mode == "prompt_rewrite":
                self.log.emit("skill_loaded", name=skill.name, path=skill.path,
                              digest=skill.digest)
        return result

    # --- cells -----------------------------------------------------------------

    async def run_cell(self, code: str, sink: CellSink) -> None:
        """Run a cell; user errors raise LilyError subclasses with the exact message."""
        self.log.emit("cell", code=code)
        status, error = "error", None
        try:
            await self._run_cell(code, sink)
            status = "ok"
        except asyncio.CancelledError:
            status = "interrupted"
            raise
        except LilyError as exc:
            error = str(exc)
            raise
        except Exception as exc:  # a bug: recorded by name, the kernel shows the traceback
            error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self.log.emit("cell_finished", status=status, error=error)
            if self.log.problem and not self.log_problem_told:  # once, not every cell
                sink.notice(f"The event log is off: {self.log.problem}.")
                self.log_problem_told = True

    async def _run_cell(self, code: str, sink: CellSink) -> None:
        if not code.strip():
            return  # a blank cell does nothing, as in Python kernels
        parsed = parse_command(code)
        if parsed is None:
            await self._converse(code, None, sink)
            return
        # The command itself runs off the event loop (a reload can read thousands of
        # files), so an interrupt can cancel this await; its state change is applied
        # here afterwards, never by a cancelled cell.
        outcome = await asyncio.to_thread(run_command, self.command_context(), parsed)
        result = self._finish_command(parsed, outcome)
        if result.error is not None:
            raise CommandError(result.error)
        if result.invocation is not None:
            forced = self.session.skill_snapshot.get(result.invocation.skill)
            assert forced is not None  # the command found it in this very snapshot
            await self._converse(result.invocation.request, forced, sink)
        else:
            sink.show(result)

    async def _converse(self, text: str, forced: Skill | None, sink: CellSink) -> None:
        from lily_kernel.runtime.conversation import converse  # the model path, on demand

        await converse(self, text, forced, sink)

    # --- completion and inspection -----------------------------------------------

    def complete(self, code: str, cursor: int) -> Completion:
        """Tab completion of a command cell, from this session's snapshot and agents."""
        return complete(code, cursor, self.session.skill_snapshot, self.env.list_agents())

    def inspect(self, code: str, cursor: int) -> CommandResult | None:
        """Shift-Tab: the help of the skill under the cursor, if any."""
        return inspect(code, cursor, self.session.skill_snapshot)

    def close(self) -> None:
        self.log.close()
