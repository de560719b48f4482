"""One conversational turn: the model, at most one skill, policy-gated tools, a step bound.

History rule: a turn is appended to the conversation state only when it completes. A
turn that fails, is interrupted or hits the step limit leaves the history exactly as
it was before the cell (what was shown stays visible in the notebook).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lily_kernel.config import EMBEDDED_MODEL
from lily_kernel.errors import ModelError, ModelNotConfiguredError, StepLimitError
from lily_kernel.llm.base import ChatModel, ChatRequest, ChatResponse, ToolCall
from lily_kernel.prompting import (
    LOAD_SKILL,
    SKILL_FILES_NOTE,
    ModelRequest,
    build_catalog,
    build_model_request,
    build_system_prompt,
    load_skill_tool,
)
from lily_kernel.prompting.budget import (
    answer_reserve,
    catalog_budget,
    estimate_tokens,
    fit_messages,
)
from lily_kernel.prompting.selection import (
    SELECTION_MAX_TOKENS,
    parse_selection,
    selection_schema,
    skill_message,
)
from lily_kernel.runtime.replay_records import error_record, response_record
from lily_kernel.runtime.tool_calls import run_model_tool
from lily_kernel.skills import Skill
from lily_kernel.tools import ToolOutcome

if TYPE_CHECKING:
    from lily_kernel.runtime.runtime import CellSink, LilyRuntime

__all__ = ["EMBEDDED_NOTICE", "NO_MODEL_MESSAGE", "STREAM_INTERVAL", "converse", "footer_line"]

# A short first line and a short list: one long line wrapped mid-word in JupyterLab.
NO_MODEL_MESSAGE = (
    "Error: no model configured.\n"
    "The embedded local model is not installed. Do one of these:\n"
    "- install the local model: ./setup.sh, or pip install 'lily-kernel[local]';\n"
    "- set LILY_MODEL (e.g. openai/gpt-4o-mini) and the provider's key variable\n"
    "  (e.g. OPENAI_API_KEY) before starting Jupyter;\n"
    "- or add `model: openai/gpt-4o-mini` to lily.yaml beside the notebook.\n"
    "Then restart the kernel. Commands such as /help work without a model."
)
EMBEDDED_NOTICE = (
    f"Answering with the embedded model, {EMBEDDED_MODEL}: small (135M parameters), "
    "local and offline, so expect simple answers. For a real model, set LILY_MODEL (e.g. "
    "openai/gpt-4o-mini) and the provider's key, or `model:` in lily.yaml, and restart "
    "the kernel."
)
STREAM_INTERVAL = 0.05  # seconds between display updates while a reply streams


@dataclass
class _Turn:
    """The state of one request while the model works on it."""

    request: ModelRequest
    loaded: Skill | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    last_context: int = 0  # tokens the last call read and wrote: the window it used
    cost: float | None = 0.0  # None once any call's cost is unknown

    @property
    def manual(self) -> bool:
        return self.request.forced_skill is not None

    def active_skill(self, runtime: LilyRuntime) -> Skill | None:
        """The skill this request follows: forced by the person, or loaded by the model."""
        if self.request.forced_skill is not None:
            return runtime.session.skill_snapshot.get(self.request.forced_skill)
        return self.loaded


class _StreamView:
    """Accumulates streamed text and updates the display at most every STREAM_INTERVAL."""

    def __init__(self, sink: CellSink, enabled: bool, before: str) -> None:
        self.sink, self.enabled, self.before = sink, enabled, before
        self.current = ""
        self._last = 0.0

    def __call__(self, delta: str) -> None:
        self.current += delta
        now = time.monotonic()
        if self.enabled and now - self._last >= STREAM_INTERVAL:
            self._last = now
            self.sink.stream(self.before + self.current)


def footer_line(model: ChatModel, turn: _Turn) -> str:
    """Model, tokens in and out, share of the context window, cost where known."""
    parts = [model.name, f"{turn.tokens_in:,} tokens in, {turn.tokens_out:,} out"]
    window = model.context_window
    if window:
        parts.append(f"{100 * turn.last_context / window:.0f}% of the {window:,}-token context")
    if turn.cost == 0.0:
        parts.append("no cost")
    elif turn.cost is not None:
        parts.append(f"${turn.cost:.4f}")
    return " · ".join(parts)


def _assistant_message(response: ChatResponse) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": response.text or None}
    if response.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in response.tool_calls
        ]
    return message


class _Conversation:
    def __init__(self, runtime: LilyRuntime, sink: CellSink) -> None:
        self.runtime = runtime
        self.session = runtime.session
        self.env = runtime.env
        self.sink = sink

    # --- tools offered -----------------------------------------------------------

    def _tools(self, turn: _Turn) -> tuple[list[dict[str, Any]], list[str]]:
        """The tool schemas offered, and the names of the tools among them (not
        load_skill): the request's own, until a skill the model loads narrows them."""
        if turn.loaded is None:
            schemas = list(turn.request.tools)
        else:
            tools = self.env.policy.model_tools(self.env.registry, turn.loaded.narrowed_tools,
                                                skill_active=True)
            # load_skill stays offered after a load, so a second one can be refused.
            schemas = [load_skill_tool(), *(t.json_schema() for t in tools)]
        names = [s["function"]["name"] for s in schemas]
        return schemas, [name for name in names if name != LOAD_SKILL]

    # --- tool calls ----------------------------------------------------------------

    def _activate(self, turn: _Turn, skill: Skill) -> None:
        """The model selected `skill` (by `load_skill` or by declaration): it is the
        turn's one skill, logged and shown the same way either way."""
        turn.loaded = skill
        self.runtime.log.emit("skill_invoked", name=skill.name, mode="auto")
        self.runtime.log.emit("skill_loaded", name=skill.name, path=skill.path,
                              digest=skill.digest)
        self.sink.notice(f"Skill: {skill.name} (selected by the model)")

    def _load_skill(self, turn: _Turn, args: dict[str, Any]) -> ToolOutcome:
        name = args.get("name")
        snapshot = self.session.skill_snapshot
        if turn.manual:
            return ToolOutcome.refused(LOAD_SKILL, (
                f"the person invoked the skill '{turn.request.forced_skill}' for this "
                "request; load_skill is not available"))
        if turn.loaded is not None:
            return ToolOutcome.refused(LOAD_SKILL, (
                f"the skill '{turn.loaded.name}' is already loaded for this request; only "
                "one skill can be used per request"))
        skill = snapshot.get(name) if isinstance(name, str) else None
        if skill is None:
            return ToolOutcome.refused(LOAD_SKILL, f"no skill named {name!r} in this session")
        if not skill.model_visible:
            return ToolOutcome.refused(
                LOAD_SKILL, f"the skill '{skill.name}' can only be invoked by the person")
        self._activate(turn, skill)
        return ToolOutcome(LOAD_SKILL, allowed=True, output=(
            f"SKILL.md of '{skill.name}':\n\n{skill.body.strip()}\n\n({SKILL_FILES_NOTE})\n"))

    async def _run_call(self, turn: _Turn, call: ToolCall, offered: list[str],
                        step: int) -> str:
        try:
            args = json.loads(call.arguments) if call.arguments.strip() else {}
            if not isinstance(args, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            result = f"Error: the arguments are not a JSON object ({exc})."
            self.runtime.log.emit("tool_call", name=call.name, allowed=False, step=step,
                                  error=f"invalid arguments: {exc}", result=result)
            # Every call gets its notice, this one too (the model is told and may retry).
            self.sink.notice(f"Tool {call.name}: not run: its arguments are not a JSON "
                             "object")
            return result
        if call.name == LOAD_SKILL:
            loaded = self._load_skill(turn, args)
            self.runtime.log.emit("tool_call", name=call.name, allowed=loaded.allowed,
                                  step=step, arguments=args, result=loaded.output)
            if not loaded.allowed:
                self.sink.notice(f"load_skill {args.get('name')!r}: {loaded.output}")
            return loaded.output
        outcome = await run_model_tool(self.runtime, self.sink, call.name, args, offered,
                                       turn.active_skill(self.runtime))
        self.runtime.log.emit("tool_call", name=call.name, allowed=outcome.allowed, step=step,
                              arguments=args, error=outcome.detail or None,
                              result=outcome.output)
        status = "ran" if not outcome.error else outcome.detail.rstrip(".")
        self.sink.notice(f"Tool {call.name}: {status}")
        return outcome.output

    # --- model calls -------------------------------------------------------------------

    async def _call(self, model: ChatModel, turn: _Turn, request: ChatRequest,
                    on_text: Callable[[str], None], step: int | str) -> ChatResponse:
        """One model call, logged as a `model_call` event, counted for the footer."""
        started = time.perf_counter()
        outcome = "error"  # a bug in Lily, unless one of the cases below
        # What replay feeds back instead of a model (runtime/replay_records.py).
        recorded: dict[str, Any] = {"supports_tools": model.supports_tools}
        try:
            response = await model.complete(request, on_text)
            outcome = "ok"
            recorded |= response_record(response)
        except ModelError as exc:
            outcome = exc.kind
            recorded["error"] = error_record(exc)
            raise
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        finally:
            self.runtime.log.emit(
                "model_call", model=model.name, step=step, outcome=outcome,
                latency_ms=round((time.perf_counter() - started) * 1000, 1),
                context_window=model.context_window, **recorded)
        turn.tokens_in += response.usage.prompt_tokens
        turn.tokens_out += response.usage.completion_tokens
        turn.last_context = response.usage.prompt_tokens + response.usage.completion_tokens
        turn.cost = None if turn.cost is None or response.cost is None \
            else turn.cost + response.cost
        return response

    async def _declare(self, model: ChatModel, turn: _Turn) -> None:
        """For a model that cannot call tools: one constrained step that names a skill
        of the catalog or none (prompting/selection.py); a named skill's body follows."""
        catalog = turn.request.catalog
        if model.supports_tools or turn.manual or catalog is None or not catalog.listed:
            return
        request = ChatRequest(list(turn.request.messages),
                              json_schema=selection_schema(catalog.listed),
                              max_tokens=SELECTION_MAX_TOKENS)
        response = await self._call(model, turn, request, lambda _text: None, "select")
        selection = parse_selection(response.text, catalog.listed)
        skill = self.session.skill_snapshot.get(selection.name or "")
        body = skill_message(skill.name, skill.body, turn.request.messages) \
            if skill is not None else None
        if selection.outcome == "selected" and body is not None and \
                not self._fits([*turn.request.messages, body], model):
            selection = dataclasses.replace(
                selection, outcome="too_long",
                detail=f"the SKILL.md of '{selection.name}' does not fit the model's "
                       f"{model.context_window:,}-token context window")
        log = self.runtime.log
        log.emit("skill_selection", outcome=selection.outcome, name=selection.name,
                 detail=selection.detail or None, reply=response.text[:200])
        if selection.outcome == "selected" and skill is not None and body is not None:
            self._activate(turn, skill)
            # Only the body (or the line pointing back to it) follows the shared prefix:
            # the declaration's JSON is not kept (a small model would otherwise echo it).
            turn.messages.append(body)
        elif selection.outcome != "none":
            self.sink.notice(f"Skill selection refused: {selection.detail}; answering "
                             "without a skill.")

    def _fits(self, messages: list[dict[str, Any]], model: ChatModel) -> bool:
        window = model.context_window
        if window is None:
            return True
        reserve = answer_reserve(window, self.session.model_config.max_tokens)
        return estimate_tokens(messages) <= window - reserve

    # --- the loop --------------------------------------------------------------------

    async def run(self, turn: _Turn) -> None:
        config = self.session.model_config
        model = await self.runtime.get_model()
        base = list(turn.request.messages)
        await self._declare(model, turn)
        for step in range(1, config.max_steps + 1):
            schemas, offered = self._tools(turn) if model.supports_tools else ([], [])
            view = _StreamView(self.sink, config.stream, "\n\n".join([*turn.texts, ""]))
            response = await self._call(model, turn, ChatRequest(base + turn.messages, schemas),
                                        view, step)
            turn.messages.append(_assistant_message(response))
            if response.text:
                turn.texts.append(response.text)
            if not response.tool_calls:
                footer = footer_line(model, turn) if config.footer else None
                self.sink.reply("\n\n".join(turn.texts), footer)
                return
            for call in response.tool_calls:
                # Recomputed per call: a skill loaded earlier in this same message
                # narrows the tools for the calls after it.
                offered = self._tools(turn)[1]
                output = await self._run_call(turn, call, offered, step)
                turn.messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
        raise StepLimitError(
            f"Error: the model did not finish within {config.max_steps} steps (max_steps); "
            "the request was stopped and is not kept in the history. Raise max_steps in "
            "lily.yaml if the task needs more.",
        )


def _fit(runtime: LilyRuntime, model: ChatModel, request: ModelRequest,
         sink: CellSink) -> ModelRequest:
    """The request with the oldest complete turns left out when the history would
    overflow the model's context window (with a notice, never silently)."""
    window = model.context_window
    if window is None:
        return request
    config = runtime.session.model_config
    fitted = fit_messages(request.messages, window, answer_reserve(window, config.max_tokens))
    if not fitted.fits:
        raise ModelError(
            "context_window",
            f"Error: this message does not fit the model's {window:,}-token context window "
            "(about {:,} tokens with the system context). Shorten it, or use a model with "
            "a larger context.".format(fitted.estimated_tokens))
    if fitted.dropped_turns:
        sink.notice(f"{fitted.dropped_turns} earlier turn(s) left out of what the model "
                    f"reads, to fit its {window:,}-token context window.")
    return dataclasses.replace(request, messages=fitted.messages)


def _request(runtime: LilyRuntime, model: ChatModel, text: str, forced: Skill | None,
             sink: CellSink) -> ModelRequest:
    """The turn's request: the catalog sized to the model's context window, or the
    skill the person forced; tools only for a model that can call them."""
    session = runtime.session
    configured = runtime.env.config.catalog_max_chars
    empty = build_catalog((), configured)  # the catalog's frame, without entries
    without_catalog = build_system_prompt(session.persona, empty,
                                          tool_calls=model.supports_tools)
    budget = catalog_budget(model.context_window, configured, without_catalog)
    tools = runtime.env.policy.model_tools(
        runtime.env.registry, forced.narrowed_tools if forced else None,
        skill_active=forced is not None,
    ) if model.supports_tools else []
    request = build_model_request(
        persona=session.persona,
        snapshot=session.skill_snapshot,
        history=session.conversation_state.messages,
        user_text=text,
        tool_schemas=[t.json_schema() for t in tools],
        catalog_max_chars=budget,
        forced_skill=forced,
        tool_calls=model.supports_tools,
    )
    omitted = request.catalog.omitted if request.catalog else ()
    if omitted:
        shown = ", ".join(omitted[:10]) + (f" and {len(omitted) - 10} more"
                                           if len(omitted) > 10 else "")
        limit = (f"catalog_max_chars = {configured:,}" if budget == configured else
                 f"{budget:,} characters, what the model's {model.context_window:,}-token "
                 "context window leaves for it")
        sink.notice(f"{len(omitted)} skill(s) left out of the model's catalog (over "
                    f"{limit}): {shown}. They still work with /skill.")
    return request


async def converse(
    runtime: LilyRuntime, text: str, forced: Skill | None, sink: CellSink
) -> None:
    """Run one turn (with `forced` when the person invoked a skill); append it to the
    history only once it has completed. Every model request is built here, by prompting."""
    session = runtime.session
    if session.model_config.model is None:
        raise ModelNotConfiguredError(NO_MODEL_MESSAGE)
    model = await runtime.get_model()
    if session.embedded_default and not runtime.model_told:
        sink.notice(EMBEDDED_NOTICE)  # once per session, in its first chat cell
        runtime.model_told = True
    request = _request(runtime, model, text, forced, sink)
    if runtime.persona_told is not session.persona:  # once per persona, not every cell
        for notice in session.persona.notices:
            sink.notice(notice)
        runtime.persona_told = session.persona
    turn = _Turn(request=_fit(runtime, model, request, sink))
    await _Conversation(runtime, sink).run(turn)
    session.conversation_state.messages.extend([request.user_message, *turn.messages])
