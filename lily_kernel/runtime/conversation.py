"""One conversational turn: the model, at most one skill, policy-gated tools, a step bound.

History rule: a turn is appended to the conversation state only when it completes. A
turn that fails, is interrupted or hits the step limit leaves the history exactly as
it was before the cell (what was shown stays visible in the notebook).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lily_kernel.errors import ModelError, ModelNotConfiguredError
from lily_kernel.llm.base import ChatRequest, ChatResponse, ToolCall
from lily_kernel.prompting import (
    LOAD_SKILL,
    SKILL_FILES_NOTE,
    ModelRequest,
    build_model_request,
    load_skill_tool,
)
from lily_kernel.runtime.replay_records import error_record, response_record
from lily_kernel.runtime.tool_calls import run_model_tool
from lily_kernel.skills import Skill

if TYPE_CHECKING:
    from lily_kernel.runtime.runtime import CellSink, LilyRuntime

__all__ = ["NO_MODEL_MESSAGE", "STREAM_INTERVAL", "converse"]

NO_MODEL_MESSAGE = (
    "Error: no model configured. Set LILY_MODEL to a litellm model name "
    "(e.g. openai/gpt-4o-mini) and the provider's key variable (e.g. OPENAI_API_KEY) "
    "before starting Jupyter, or add `model: openai/gpt-4o-mini` to lily.yaml in the "
    "notebook's folder; then restart the kernel. Commands (/help) work without a model."
)
STREAM_INTERVAL = 0.05  # seconds between display updates while a reply streams


@dataclass
class _Turn:
    """The state of one request while the model works on it."""

    request: ModelRequest
    loaded: Skill | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)

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
            tools = self.env.policy.model_tools(self.env.registry, turn.loaded.allowed_tools,
                                                skill_active=True)
            # load_skill stays offered after a load, so a second one can be refused.
            schemas = [load_skill_tool(), *(t.json_schema() for t in tools)]
        names = [s["function"]["name"] for s in schemas]
        return schemas, [name for name in names if name != LOAD_SKILL]

    # --- tool calls ----------------------------------------------------------------

    def _load_skill(self, turn: _Turn, call: ToolCall, args: dict[str, Any]) -> str:
        name = args.get("name")
        snapshot = self.session.skill_snapshot
        if turn.manual:
            return (f"Refused: the person invoked the skill '{turn.request.forced_skill}' for "
                    "this request; load_skill is not available.")
        if turn.loaded is not None:
            return (f"Refused: the skill '{turn.loaded.name}' is already loaded for this "
                    "request; only one skill can be used per request.")
        skill = snapshot.get(name) if isinstance(name, str) else None
        if skill is None:
            return f"Refused: no skill named {name!r} in this session."
        if not skill.model_visible:
            return f"Refused: the skill '{skill.name}' can only be invoked by the person."
        turn.loaded = skill
        log = self.runtime.log
        log.emit("skill_invoked", name=skill.name, mode="auto")
        log.emit("skill_loaded", name=skill.name, path=skill.path, digest=skill.digest)
        self.sink.notice(f"Skill: {skill.name} (selected by the model)")
        return f"SKILL.md of '{skill.name}':\n\n{skill.body.strip()}\n\n({SKILL_FILES_NOTE})\n"

    async def _run_call(self, turn: _Turn, call: ToolCall, offered: list[str],
                        step: int) -> str:
        try:
            args = json.loads(call.arguments) if call.arguments.strip() else {}
            if not isinstance(args, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            self.runtime.log.emit("tool_call", name=call.name, allowed=False, step=step,
                                  error=f"invalid arguments: {exc}")
            return f"Error: the arguments are not a JSON object ({exc})."
        if call.name == LOAD_SKILL:
            output = self._load_skill(turn, call, args)
            refused = output.startswith("Refused")
            self.runtime.log.emit("tool_call", name=call.name, allowed=not refused, step=step,
                                  arguments=args, result=output)
            if refused:
                self.sink.notice(f"load_skill {args.get('name')!r}: {output}")
            return output
        outcome = await run_model_tool(self.runtime, self.sink, call.name, args, offered,
                                       turn.active_skill(self.runtime))
        self.runtime.log.emit("tool_call", name=call.name, allowed=outcome.allowed, step=step,
                              arguments=args, error=outcome.detail or None,
                              result=outcome.output)
        status = "ran" if not outcome.error else outcome.detail.rstrip(".")
        self.sink.notice(f"Tool {call.name}: {status}")
        return outcome.output

    # --- the loop --------------------------------------------------------------------

    async def run(self, turn: _Turn) -> None:
        config = self.session.model_config
        model = self.runtime.get_model()
        base = list(turn.request.messages)
        for step in range(1, config.max_steps + 1):
            schemas, offered = self._tools(turn)
            view = _StreamView(self.sink, config.stream, "\n\n".join(turn.texts + [""]))
            started = time.perf_counter()
            outcome = "cancelled"
            recorded: dict[str, Any] = {}
            try:
                response = await model.complete(ChatRequest(base + turn.messages, schemas), view)
                outcome = "ok"
                recorded = {"response": response_record(response)}
            except ModelError as exc:
                outcome = exc.kind
                recorded = {"error": error_record(exc)}
                raise
            finally:
                # `response` / `error` are what replay feeds back instead of a model.
                self.runtime.log.emit(
                    "model_call", model=model.name, step=step, outcome=outcome,
                    latency_ms=round((time.perf_counter() - started) * 1000, 1),
                    **({"prompt_tokens": response.usage.prompt_tokens,
                        "completion_tokens": response.usage.completion_tokens,
                        "finish_reason": response.finish_reason} if outcome == "ok" else {}),
                    **recorded)
            turn.messages.append(_assistant_message(response))
            if response.text:
                turn.texts.append(response.text)
            if not response.tool_calls:
                self.sink.reply("\n\n".join(turn.texts))
                return
            for call in response.tool_calls:
                # Recomputed per call: a skill loaded earlier in this same message
                # narrows the tools for the calls after it.
                offered = self._tools(turn)[1]
                output = await self._run_call(turn, call, offered, step)
                turn.messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
        raise ModelError(
            "step_limit",
            f"Error: the model did not finish within {config.max_steps} steps (max_steps); "
            "the request was stopped and is not kept in the history. Raise max_steps in "
            "lily.yaml if the task needs more.",
        )


async def converse(
    runtime: LilyRuntime, text: str, request: ModelRequest | None, sink: CellSink
) -> None:
    """Run one turn; append it to the history only once it has completed."""
    session = runtime.session
    if session.model_config.model is None:
        raise ModelNotConfiguredError(NO_MODEL_MESSAGE)
    if request is None:
        tools = runtime.env.policy.model_tools(runtime.env.registry)
        request = build_model_request(
            persona=session.persona,
            snapshot=session.skill_snapshot,
            history=session.conversation_state.messages,
            user_text=text,
            tool_schemas=[t.json_schema() for t in tools],
            catalog_max_chars=runtime.env.config.catalog_max_chars,
        )
        omitted = request.catalog.omitted if request.catalog else ()
        if omitted:
            shown = ", ".join(omitted[:10]) + (f" and {len(omitted) - 10} more"
                                               if len(omitted) > 10 else "")
            sink.notice(
                f"{len(omitted)} skill(s) left out of the model's catalog (over "
                f"catalog_max_chars = {runtime.env.config.catalog_max_chars:,}): {shown}. "
                "They still work with /skill."
            )
    if runtime.persona_told is not session.persona:  # once per persona, not every cell
        for notice in session.persona.notices:
            sink.notice(notice)
        runtime.persona_told = session.persona
    turn = _Turn(request=request)
    await _Conversation(runtime, sink).run(turn)
    session.conversation_state.messages.extend([request.user_message, *turn.messages])
