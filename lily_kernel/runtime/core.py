"""The session as three values: the `Workspace` it is built from (environment.py), its
`SessionState` (state.py), its `Services` (services.py); with its log, its collaborators,
its record and its model. What the flows take (command_flow, trust_flow, mcp_flow,
conversation); the runtime (runtime.py) adds cells, commands and the start.

Taking up a new workspace is one assignment (`take_up`): the services read their
settings from it at use; the session follows what it decides (its model, its profile).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lily_kernel.config import Profile
from lily_kernel.display import Told
from lily_kernel.environment import Workspace
from lily_kernel.errors import ModelError
from lily_kernel.events import EventLog, ProfileSetBy, catalog_events
from lily_kernel.runtime.collaborators import Collaborators, SessionRecord, TurnFacts
from lily_kernel.runtime.services import Services
from lily_kernel.runtime.state import SessionState
from lily_kernel.session import Session
from lily_kernel.skills import SkillSnapshot, lily_home

if TYPE_CHECKING:  # loaded with the first tool call, the model seam with the first chat cell
    from lily_kernel.llm.base import ChatModel
    from lily_kernel.runtime.tool_gate import ToolGate

__all__ = ["RuntimeCore"]


@dataclass
class RuntimeCore:
    """One session's values and the I/O around them. Two runtimes never share state."""

    env: Workspace  # what the session is built from: replaced whole, never changed
    state: SessionState  # what it has said and decided
    log: EventLog
    collaborators: Collaborators = field(default_factory=Collaborators)
    record: SessionRecord | None = None  # the session's record (collaborators.record)
    model: ChatModel | None = None  # created on the first conversational cell
    _model_loading: asyncio.Future[ChatModel] | None = None
    services: Services = field(init=False)  # what it runs, over the workspace in force

    def __post_init__(self) -> None:
        self.services = Services(lambda: self.env, self.log, self.state.policy,
                                 self.collaborators.run_script)

    # What the record and the tests read of the session, by the names they know.
    @property
    def session(self) -> Session:
        return self.state.session

    @property
    def told(self) -> Told:
        return self.state.told

    @property
    def last_turn(self) -> tuple[TurnFacts, int] | None:
        return self.state.last_turn

    @last_turn.setter
    def last_turn(self, turn: tuple[TurnFacts, int] | None) -> None:
        self.state.last_turn = turn

    @property
    def gate(self) -> ToolGate:
        return self.services.gate

    def take_up(self, env: Workspace) -> None:
        """Go on with `env`, the same workspace read again (trust given, MCP tools
        joined): its settings from the next run and tool call, its model from the next
        chat cell, its skill vectors from the next snapshot's ranker."""
        self.env = env  # the services read their settings from it: nothing to copy
        session = self.session
        session.skill_index.use_meaning(env.skill_vectors)
        model = env.session_model()
        if model != session.model_config:
            session.model_config, self.model, self._model_loading = model, None, None
            session.embedded_default = model is not env.config.llm
        self.update_profile("configuration", configured=env.config.policy)

    def update_profile(self, by: ProfileSetBy, **change: Profile) -> None:
        """A new configured or chosen policy profile; the one in force, when it changes,
        is a `policy_profile` event (replay runs into the same)."""
        if self.state.policy.update(**change):
            from lily_kernel.events import PolicyChanged  # (a kind loaded with its first use)

            self.log.emit(PolicyChanged(profile=self.state.policy.profile, by=by))

    def log_catalog(self, snap: SkillSnapshot) -> None:
        for event in catalog_events(snap):
            self.log.emit(event)

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
        from lily_kernel.events import ModelLoad  # (a kind loaded with its first use)
        from lily_kernel.llm.records import error_record

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
