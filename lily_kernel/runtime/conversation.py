"""A chat turn from the cell to the history: the session's record plans it (from the
record, continuing a recorded conversation, or by the model; docs/sessions.md), the
turn engine runs it (turn.py). `/rerun` asks a turn again, afresh."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from lily_kernel.commands import AskAgain
from lily_kernel.commands.python import looks_like_python
from lily_kernel.display import Notice
from lily_kernel.display.messages import EMBEDDED_NOTICE, NO_MODEL_MESSAGE, PYTHON_CELL_HINT
from lily_kernel.display.notices import forced_skill_cut, rerun_replaced
from lily_kernel.errors import CommandError, ModelNotConfiguredError
from lily_kernel.record.key import offered_tools, persona_digest
from lily_kernel.record.seam import RecordOpening, TurnFacts, TurnInputs
from lily_kernel.runtime.core import RuntimeCore
from lily_kernel.runtime.encoding_notice import announce_encoding
from lily_kernel.runtime.sink import CellSink
from lily_kernel.skills import Skill, lily_home

if TYPE_CHECKING:  # (it imports nothing of this module: no cycle)
    from lily_kernel.llm.base import ChatModel
    from lily_kernel.runtime.turn import Turn

__all__ = ["ask_again", "build_turn", "converse", "end_shell", "forced_skill_model",
           "record_opening",
           "turn_inputs"]

ModelSource = Callable[[Callable[[], Awaitable["ChatModel"]]], Awaitable["ChatModel"]]


async def converse(runtime: RuntimeCore, facts: TurnFacts, forced: Skill | None,
                   sink: CellSink, stop: threading.Event) -> None:
    """Run one turn; append it to the history once it has completed, or, stopped by the
    person, what they saw of it (marked as stopped). A turn that failed leaves the
    history as it was (a recorded conversation it continues stays taken up)."""
    plan = await runtime.record.plan(turn_inputs(runtime, facts),
                                     lambda said: sink.show(Notice(said))) \
        if runtime.record is not None else None
    state = runtime.session.conversation_state
    if plan is not None and plan.history is not None:
        state.messages[:] = plan.history
    start = len(state.messages)
    turn = await build_turn(runtime, facts.text, forced, sink, stop,
                            plan.model if plan is not None else None)
    try:
        messages = await turn.run()
    except asyncio.CancelledError:
        stopped = turn.stopped()
        state.messages.extend(stopped)
        if plan is not None:
            plan.finished(stopped, stopped=True)
        raise
    finally:
        end_shell(runtime, sink)
    state.messages.extend(messages)
    runtime.last_turn = (facts, start)
    if plan is not None:
        plan.finished(messages, stopped=False)


def end_shell(runtime: RuntimeCore, sink: CellSink) -> None:
    """The shell's session sandbox ends with the turn; the cell says what that ended."""
    processes, count = runtime.services.end_turn()
    if count:
        from lily_kernel.display.sessions import ended_with_cell

        sink.show(Notice(ended_with_cell(processes, count)))


def record_opening(runtime: RuntimeCore) -> RecordOpening:
    """What the session's record is made from (record/seam.py), as the session starts."""
    env, log = runtime.env, runtime.log
    return RecordOpening(
        workspace=env.workspace, session_id=runtime.session.session_id,
        environ=dict(env.host.environ), log=log.path if log.enabled else None,
        redact=log.redact,
        roots=tuple((r.source, r.path) for r in runtime.session.skill_snapshot.roots))


def turn_inputs(runtime: RuntimeCore, facts: TurnFacts) -> TurnInputs:
    """What determines this turn's answer now, as one frozen value for the record."""
    session, env = runtime.session, runtime.env
    snapshot, persona = session.skill_snapshot, session.persona
    return TurnInputs(
        facts=facts, history=tuple(session.conversation_state.messages),
        model=session.model_config, skills=snapshot.digest,
        roots=tuple((r.source, r.path) for r in snapshot.roots),
        persona=persona_digest(persona.agent, [(f.name, f.content) for f in persona.files]),
        tools=offered_tools((t.name, env.policy.decision_for(t)) for t in env.registry),
        answers=env.config.answers)


async def ask_again(runtime: RuntimeCore, again: AskAgain, code: str, cell_id: str | None,
                    sink: CellSink, stop: threading.Event) -> None:
    """`/rerun`: `again.request` answered by the model, or the session's last turn asked
    again in its place (the history as before it; restored if the new answer fails)."""
    if again.request is not None or runtime.last_turn is None:  # (the command checked)
        facts = TurnFacts(again.request or "", None, code, cell_id, fresh=True)
        return await converse(runtime, facts, None, sink, stop)
    last, start = runtime.last_turn
    forced = runtime.session.skill_snapshot.get(last.forced) if last.forced else None
    if last.forced and forced is None:
        raise CommandError(f"/rerun: the skill '{last.forced}' of the last turn is no "
                           "longer in this session's snapshot.")
    messages = runtime.session.conversation_state.messages
    dropped, messages[start:] = messages[start:], []
    sink.show(Notice(rerun_replaced(last.text)))
    try:
        await converse(runtime, replace(last, code=code, cell_id=cell_id, fresh=True,
                                        rerun=True), forced, sink, stop)
    except BaseException:
        if len(messages) == start:  # nothing of the new turn kept: the old one back
            messages.extend(dropped)
        raise


async def build_turn(runtime: RuntimeCore, text: str, forced: Skill | None, sink: CellSink,
                     stop: threading.Event | None = None,
                     model_source: ModelSource | None = None) -> Turn:
    """A turn for `text`, not yet run: its model (the session's, or `model_source`'s),
    its request sized to the model, the notices the person is owed (the model, once; a
    first ranking's time; left-out skills and turns). The caller extends the history."""
    # The turn engine (and prompting) load with the first chat cell, not at start.
    from lily_kernel.prompting.budget import skill_body_budget
    from lily_kernel.runtime.mcp_flow import start_mcp_servers
    from lily_kernel.runtime.skill_choice import SkillChoice
    from lily_kernel.runtime.turn import Turn
    from lily_kernel.runtime.turn_request import draft_turn_request, fit_request

    session = runtime.session
    if looks_like_python(text):  # said even when no model can answer it
        sink.show(Notice(PYTHON_CELL_HINT))
    if session.model_config.model is None:
        raise ModelNotConfiguredError(NO_MODEL_MESSAGE)
    live = forced_skill_model(runtime, forced, sink)  # a forced skill's `model:`
    model = await (model_source(live) if model_source is not None else live())
    if session.embedded_default and runtime.told.first("embedded model"):
        sink.show(Notice(EMBEDDED_NOTICE))  # once per session, in its first chat cell
    draft = await asyncio.to_thread(draft_turn_request, session,
                                    runtime.env.config.catalog_max_chars, model, text, forced)
    if draft.ranks:  # a catalog over its budget lists the request's best matches
        await announce_encoding(session.ranker(), sink)
    request, catalog_notice = await asyncio.to_thread(draft.finish, stop)
    if catalog_notice is not None:
        sink.show(Notice(catalog_notice))
    if forced is not None and request.forced_left:
        sink.show(Notice(forced_skill_cut(forced.name, request.forced_left)))
    if runtime.told.first(("persona", session.persona)):  # once per persona read
        for notice in session.persona.notices:
            sink.show(Notice(notice))
    request, trim_notice = fit_request(session, model, request)
    if trim_notice is not None:
        sink.show(Notice(trim_notice))
    await start_mcp_servers(runtime, sink)  # their tools join the registry and policy
    choice = SkillChoice(session.skill_snapshot, runtime.log, sink, forced=forced,
                         digests=runtime.env.trust.digests,
                         body_max_chars=skill_body_budget(model.context_window))
    return Turn(model=model, gate=runtime.gate, log=runtime.log, sink=sink,
                settings=session.model_config, request=request, choice=choice,
                ranker=session.ranker(), stop=stop)


def forced_skill_model(runtime: RuntimeCore, forced: Skill | None, sink: CellSink
                       ) -> Callable[[], Awaitable[ChatModel]]:
    """How the turn's live model is had: the session's, or the forced skill's `model:`
    where the person's environment allows it (runtime/skill_model.py)."""
    from lily_kernel.runtime.skill_model import choose_skill_model
    from lily_kernel.skills.overrides import override_settings

    config = runtime.session.model_config
    if forced is None or config.model is None:
        return runtime.get_model
    name = choose_skill_model(forced, override_settings(runtime.env.host.environ),
                              config.model, sink)
    if name is None:
        return runtime.get_model
    cache = lily_home(runtime.env.config) / "cache" / "local-model"
    chosen = replace(config, model=name)

    async def make() -> ChatModel:
        return await asyncio.to_thread(runtime.collaborators.make_model, chosen, cache)

    return make
