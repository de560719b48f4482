"""The one gate every tool call passes, the model's and the person's alike.

A call's arguments are parsed, the policy and the argument dataclass checked
(`check_call`), the person asked where the policy says `ask` (the tool's own question,
or its name and arguments; where the policy itself asks, `a` is an answer too: that
tool runs unasked for the rest of the session), the handler run with its context, and
the call recorded as a `tool_call` event; a model's call also leaves a notice in the
notebook. No tool is special-cased here: what differs between tools is declared on the
`Tool`. The policy applied is the configured one under the person's choices of this
session (`PolicyState`: the profile, the "always" answers), read at each call.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lily_kernel.commands import CommandOutcome, ToolDispatch, dispatched
from lily_kernel.display import Notice
from lily_kernel.display.notices import tool_arguments_not_json, tool_ran
from lily_kernel.display.returned import tool_returned
from lily_kernel.errors import ToolError, ToolRefusedError
from lily_kernel.events import Caller, EventLog, ToolCalled
from lily_kernel.prompting import (
    declined_reason,
    network_refusals_text,
    not_json_reason,
    policy_reason,
    tool_result_text,
)
from lily_kernel.runtime.approval import asker
from lily_kernel.runtime.sink import CellSink
from lily_kernel.tools import (
    ActiveSkill,
    AskReason,
    PolicyRefusal,
    PolicyState,
    Question,
    SkillSelector,
    Tool,
    ToolContext,
    ToolOutcome,
    ToolPolicy,
    ToolRegistry,
    check_call,
)
from lily_kernel.tools.questions import call_question, offering_always

if TYPE_CHECKING:
    from lily_kernel.runtime.network_flow import SessionNetwork
    from lily_kernel.runtime.skill_grants import SkillGrants

__all__ = ["ToolGate"]


def _parsed(raw: str) -> dict[str, Any] | str:
    """The arguments as a JSON object, or what is wrong with them."""
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        return str(exc)
    return arguments if isinstance(arguments, dict) else "not an object"


def with_refusals(outcome: ToolOutcome, refused: list[str]) -> ToolOutcome:
    """The outcome with the hosts its run was refused, a line each, for the model."""
    return replace(outcome, text=network_refusals_text(outcome.text, refused)) \
        if refused else outcome


def _announcement(tool: Tool | None, name: str, arguments: dict[str, Any],
                  outcome: ToolOutcome) -> str | None:
    if tool is not None and tool.announce is not None:
        return tool.announce(arguments, outcome)
    return tool_ran(name, outcome.status == "ran", outcome.detail)


@dataclass(frozen=True)
class ToolGate:
    """Runs tool calls for one session: its tools, its configured policy, the context
    every call starts from (workspace, Lily's own files, how scripts run), its log, and
    the person's choices of the session (the runtime's, shared by every gate it makes)."""

    registry: ToolRegistry
    configured: ToolPolicy
    context: ToolContext
    log: EventLog
    # What the model reads of a call passes the redactor the notebook and the log use:
    # a script that prints a credential (a .env, the kernel's environment) sends none.
    redact: Callable[[str], str] = str
    state: PolicyState = field(default_factory=PolicyState)
    # The session's host decisions: a run's connections ask in its cell (None: none).
    network: SessionNetwork | None = None
    # The active skill's pre-approvals, where the person enabled them (None: none).
    grants: SkillGrants | None = None

    @property
    def policy(self) -> ToolPolicy:
        """The policy in force now: the configured one under the person's choices."""
        return self.configured.under(self.state)

    async def model_call(self, sink: CellSink, name: str, raw_arguments: str, *,
                         offered: list[str], step: int, skill: ActiveSkill | None,
                         skills: SkillSelector | None) -> str:
        """Run a call the model made; what the model reads of it."""
        _, text = await self.model_run(sink, name, raw_arguments, offered=offered, step=step,
                                       skill=skill, skills=skills)
        return text

    async def model_run(self, sink: CellSink, name: str, raw_arguments: str, *,
                        offered: list[str], step: int, skill: ActiveSkill | None,
                        skills: SkillSelector | None) -> tuple[ToolOutcome, str]:
        """Run a call the model made: its outcome, and what the model reads of it."""
        arguments = _parsed(raw_arguments)
        if isinstance(arguments, str):
            failed = ToolOutcome(name, "failed", not_json_reason(arguments))
            self._record(failed, "model", None, step)
            # Every call gets its notice, this one too (the model is told and may retry).
            sink.show(Notice(tool_arguments_not_json(name)))
            return failed, self.redact(tool_result_text(failed.status, failed.text))
        outcome = await self.run(sink, name, arguments, "model", offered=offered, step=step,
                                 skill=skill, skills=skills)
        tool = self.registry.get(name)
        notice = _announcement(tool, name, arguments, outcome)
        if notice is not None:
            sink.show(Notice(notice))
        if tool is not None and tool.announce is None and outcome.status == "ran":
            # What it ran with and returned (a tool that announces shows its own run).
            sink.show(tool_returned(arguments, outcome.text))
        return outcome, self.redact(tool_result_text(outcome.status, outcome.text))

    async def run(self, sink: CellSink, name: str, arguments: dict[str, Any], caller: Caller,
                  *, offered: list[str] | None = None, step: int | None = None,
                  skill: ActiveSkill | None = None,
                  skills: SkillSelector | None = None) -> ToolOutcome:
        """Check, ask where the policy says so, run; every call is a `tool_call` event.
        The policy's `ask` is for the model's calls: the person's own command (a
        tool_dispatch skill) is their yes already."""
        checked = check_call(self.registry, self.policy, name, arguments, caller, offered)
        if isinstance(checked, PolicyRefusal):
            outcome = ToolOutcome(name, "refused", policy_reason(name, checked.why))
        elif isinstance(checked, ToolOutcome):
            outcome = checked
        else:
            tool, args = checked
            ctx = replace(self.context, skill=skill, skills=skills, emit=self.log.emit,
                          show=sink.show, caller=caller)
            outcome = await self._run(sink, tool, args, arguments, ctx, caller)
        self._record(outcome, caller, arguments, step)
        return outcome

    async def dispatch(self, sink: CellSink, command: str, dispatch: ToolDispatch,
                       outcome: CommandOutcome) -> CommandOutcome:
        """A tool_dispatch command's outcome once its tool ran, for the person (caller
        `owner`); refused or failed, the command's error."""
        ran = await self.run(sink, dispatch.tool, dict(dispatch.arguments), "owner")
        if ran.status != "ran":
            return CommandOutcome(replace(outcome.result, intent=None, error=(
                f"/{command} ({dispatch.tool}): {ran.detail}")))
        return CommandOutcome(dispatched(outcome.result, dispatch, ran.text), outcome.change)

    def _asks(self, tool: Tool, question: Question, caller: Caller) -> AskReason | None:
        """Why the person is asked about this call, or None. The person's own command (a
        tool_dispatch skill) is their yes already."""
        if caller != "model":
            return None
        if self.policy.decision_for(tool) == "ask":
            return self.policy.why_asked(tool.name)
        return "call" if question.always else None

    async def _run(self, sink: CellSink, tool: Tool, args: Any, arguments: dict[str, Any],
                   ctx: ToolContext, caller: Caller) -> ToolOutcome:
        try:
            # Made ready first: what the call would act on is checked before any question.
            question = (await tool.prepare(args, ctx) if tool.prepare is not None
                        else call_question(tool.name, arguments))
            why = self._asks(tool, question, caller)
            if why == "default" and self._granted(sink, tool, ctx):
                why = None  # the active skill pre-approved it: not asked
            ctx = replace(ctx, ask=asker(sink, self.log, tool.name, why))
            if why == "default" and self.policy.offers_always(tool.name):
                question = offering_always(question, tool.name)
                ask = asker(sink, self.log, tool.name, why,
                            on_always=lambda: self.state.always.add(tool.name))
            else:
                ask = ctx.ask
            if why is not None and question.unshowable is not None:
                raise ToolError(question.unshowable)
            if why is not None and not await ask(question):
                return ToolOutcome(tool.name, "refused", declined_reason(question.action))
            # The handler does what was made ready (and shown), not a new account of it.
            ctx = replace(ctx, prepared=question)
            if self.network is None:
                return ToolOutcome.returned(tool.name, await tool.handler(args, ctx))
            skill = ctx.skill.name if ctx.skill is not None else None
            async with self.network.call(sink, tool.name, skill) as call:
                returned = await tool.handler(args, ctx)
            return with_refusals(ToolOutcome.returned(tool.name, returned), call.blocked)
        except ToolRefusedError as exc:
            return ToolOutcome(tool.name, "refused", str(exc))
        except ToolError as exc:
            return ToolOutcome(tool.name, "failed", str(exc))

    def _granted(self, sink: CellSink, tool: Tool, ctx: ToolContext) -> bool:
        """Whether the request's skill pre-approves a call the policy asks about only by
        default (never a deny, `tools.ask`, an untrusted folder's or the call's own
        question: those are not "default"): runtime/skill_grants.py."""
        from lily_kernel.runtime.skill_choice import SkillChoice  # (with the first call)

        if self.grants is None or not isinstance(ctx.skills, SkillChoice):
            return False
        return self.grants.granted(sink, tool, ctx.skills.active, ctx.skill)

    def _record(self, outcome: ToolOutcome, caller: Caller,
                arguments: dict[str, Any] | None, step: int | None) -> None:
        """The call's `tool_call` event: `result` is what the caller got (for the model,
        as it reads it)."""
        result = (tool_result_text(outcome.status, outcome.text) if caller == "model"
                  else outcome.text)
        self.log.emit(ToolCalled(name=outcome.name, caller=caller, allowed=outcome.allowed,
                                 step=step, arguments=arguments, error=outcome.detail or None,
                                 result=result))
