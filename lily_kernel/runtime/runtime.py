"""Route each cell: `/` cells to the command layer, everything else to the conversation.

The runtime owns the session's I/O: it applies successful commands' state changes,
writes the event log, and (for conversational turns) calls the model.
"""

from __future__ import annotations

import asyncio
import hashlib
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
    ParsedCommand,
    parse_command,
    render_plain,
    run_command,
)
from lily_kernel.errors import CommandError, LilyError
from lily_kernel.events import Event, EventLog, session_log_path
from lily_kernel.llm.base import ChatModel
from lily_kernel.persona import Persona
from lily_kernel.prompting import ModelRequest
from lily_kernel.redaction import is_secret_name, secret_values
from lily_kernel.runtime.environment import LilyEnvironment
from lily_kernel.session import Session
from lily_kernel.skills import SkillSnapshot
from lily_kernel.tools import ToolRegistry
from lily_kernel.tools.scripts import Sandbox, find_sandbox, run_script

__all__ = ["CellSink", "LilyRuntime"]


class CellSink(Protocol):
    """Where a cell's output goes (the kernel adapter, or a test's recorder)."""

    def show(self, result: CommandResult) -> None: ...

    def stream(self, markdown: str) -> None:
        """The reply so far, while it streams."""

    def reply(self, markdown: str) -> None:
        """The finished reply."""

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
    # Runs an approved skill script; replay swaps in the recorded results.
    script_runner: Callable[..., Any] = field(default=run_script)
    _sandbox: Sandbox | None = None

    def sandbox(self) -> Sandbox:
        """bubblewrap as this machine offers it (looked for once per session)."""
        if self._sandbox is None:
            self._sandbox = find_sandbox(self.env.host.environ)
        return self._sandbox

    def get_model(self) -> ChatModel:
        """The session's model; the real one (and litellm) is created on first use."""
        if self.model is None:
            from lily_kernel.llm import create_model

            self.model = create_model(self.session.model_config)
        return self.model

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
        log = EventLog(path, session_id, secret_values(env.host.environ), listener)
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
            catalog_max_chars=self.env.config.catalog_max_chars,
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
        shown = render_plain(result) if result.ok and result.model_request is None else ""
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
        if result.model_request is not None:
            await self._converse(parsed.argument, result.model_request, sink)
        else:
            sink.show(result)

    async def _converse(self, text: str, request: ModelRequest | None, sink: CellSink) -> None:
        from lily_kernel.runtime.conversation import (
            converse,  # the model path, on demand
        )

        await converse(self, text, request, sink)

    def close(self) -> None:
        self.log.close()
