"""One chat turn, from the request to the answer: the model, at most one skill,
policy-gated tools, a step bound.

A `Turn` is made with its collaborators (the model, the tool gate, the event log, the
cell's sink, the model settings) and the request prompting built for it; `run` returns
the messages the turn adds to the history. It writes no session or runtime state: the
runtime appends those messages only when the turn completed, so a turn that fails, is
interrupted or hits the step limit leaves the history exactly as it was (what was
shown stays visible in the notebook).
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Any

from lily_kernel.config import ModelConfig
from lily_kernel.display import Notice, Reply
from lily_kernel.display.messages import (
    FULL_AUTO_NOTE,
    cannot_run_notice,
    footer,
    reading_notice,
)
from lily_kernel.display.notices import selection_refused, skill_chosen
from lily_kernel.errors import ModelError, StepLimitError
from lily_kernel.events import CallOutcome, DecidedBy, EventLog, ModelCall, SkillSelection
from lily_kernel.llm.base import ChatModel, ChatRequest, ChatResponse
from lily_kernel.llm.records import error_record, response_record
from lily_kernel.prompting import ModelRequest, declared_skill_message
from lily_kernel.prompting.budget import answer_reserve, estimate_tokens, skill_body_budget
from lily_kernel.prompting.code_blocks import offer_code, without_block
from lily_kernel.prompting.selection import (
    SELECTION_MAX_TOKENS,
    Selection,
    Shortlist,
    candidates_message,
    parse_selection,
    request_shortlist,
    selection_schema,
)
from lily_kernel.prompting.skill_text import bounded_body, skill_body
from lily_kernel.runtime.answer_code import AnswerCode
from lily_kernel.runtime.encoding_notice import announce_encoding
from lily_kernel.runtime.sink import CellSink
from lily_kernel.runtime.skill_choice import SkillChoice
from lily_kernel.runtime.tool_gate import ToolGate
from lily_kernel.skills import Skill, SkillRanker
from lily_kernel.skills.needs import execution_needs
from lily_kernel.tools import Tool
from lily_kernel.tools.python import PYTHON

__all__ = ["STREAM_INTERVAL", "Turn"]

STREAM_INTERVAL = 0.05  # seconds between display updates while a reply streams
# A model reading this many prompt tokens anew on this machine says so first, with the
# time at the embedded model's ~300 tokens a second on 2 cores (docs/local-model.md).
READING_NOTICE_AT, READ_PER_SECOND = 1_500, 300
# How a stopped answer stands in the history (the model reads it in later turns).
STOPPED_MARK = "[The person stopped this answer here.]"
STOPPED_BEFORE = "[The person stopped the answer before it began.]"


class _StreamView:
    """Accumulates streamed text and updates the display at most every STREAM_INTERVAL,
    or nine times as long as the last update took: each update renders the whole answer
    so far (display/markup.py, ~5 ms a KB), so at most a tenth of a stream is spent
    rendering it, however long the answer grows."""

    def __init__(self, sink: CellSink, enabled: bool) -> None:
        self.sink, self.enabled = sink, enabled
        self.current = ""
        self.streamed = False  # whether the display shows some of it
        self._next = 0.0

    def __call__(self, delta: str) -> None:
        self.current += delta
        now = time.monotonic()
        if self.enabled and now >= self._next:
            self.sink.stream(self.current)
            self.streamed = True
            done = time.monotonic()
            self._next = done + max(STREAM_INTERVAL, 9 * (done - now))


def _assistant_message(response: ChatResponse) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": response.text or None}
    if response.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in response.tool_calls
        ]
    return message


class Turn:
    """One request: the model's calls, its tool calls, and what the person sees."""

    def __init__(self, *, model: ChatModel, gate: ToolGate, log: EventLog, sink: CellSink,
                 settings: ModelConfig, request: ModelRequest, choice: SkillChoice,
                 ranker: SkillRanker, stop: threading.Event | None = None) -> None:
        self.model, self.gate, self.log, self.sink = model, gate, log, sink
        self.settings, self.request, self.choice = settings, request, choice
        self.ranker = ranker  # the ranker of the choice's snapshot (the shortlist)
        self.stop = stop  # set when the cell is stopped: a ranking stops encoding
        self.messages: list[dict[str, Any]] = []  # what this turn adds after the request
        self.texts: list[str] = []  # the model's texts this turn, for the history
        self.shown = 0  # how many of them are shown finished, above what then ran
        self._view: _StreamView | None = None  # the step streaming now
        self.tokens_in = 0
        self.tokens_out = 0
        self.last_context = 0  # tokens the last call read and wrote: the window it used
        self.calls = 0
        self.cost: float | None = 0.0  # None once any call's cost is unknown

    async def run(self) -> list[dict[str, Any]]:
        """Answer the request; the messages to append to the history (the person's
        message first). Raises StepLimitError past `max_steps` model calls."""
        base = list(self.request.messages)
        await self._declare()
        self._say_if_it_cannot_run()
        try:
            return await self._steps(base)
        finally:
            self._record_tool_selection()

    async def _steps(self, base: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # A model that cannot call tools is offered one fenced python block instead.
        code = AnswerCode(self.gate, self.sink) if self._offers_code() else None
        for step in range(1, self.settings.max_steps + 1):
            schemas = [t.json_schema() for t in self._offered()] if self.model.supports_tools \
                else []
            view = self._view = _StreamView(self.sink, self.settings.stream)
            sent = base + self.messages
            response = await self._call(
                ChatRequest(offer_code(sent) if code is not None else sent, schemas,
                            on_reading=self._reading), view, step)
            self.messages.append(_assistant_message(response))
            if response.text:
                self.texts.append(response.text)
            if not response.tool_calls:
                if code is not None and await self._answer_code(code, response, step):
                    continue  # one more answer, from the code's output
                self.sink.show(Reply("\n\n".join(self.texts[self.shown:]), self.footer()))
                return [self.request.user_message, *self.messages]
            self._show_before_runs()
            for call in response.tool_calls:
                # Recomputed per call: a skill loaded earlier in this same message
                # narrows the tools for the calls after it.
                offered = [t.name for t in self._offered()]
                output = await self.gate.model_call(
                    self.sink, call.name, call.arguments, offered=offered, step=step,
                    skill=self.choice.active_folder(), skills=self.choice)
                self.messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
        raise StepLimitError(
            f"the model did not finish within {self.settings.max_steps} steps (max_steps); "
            "the request was stopped and is not kept in the history. Raise max_steps in "
            "lily.yaml if the task needs more.")

    def _offers_code(self) -> bool:
        """Whether the model runs Python through a fenced block of its answer: it cannot
        call tools, and the policy offers it `python` now."""
        return not self.model.supports_tools and \
            any(t.name == PYTHON for t in self._offered())

    async def _answer_code(self, code: AnswerCode, response: ChatResponse, step: int) -> bool:
        """The answer's python block run (runtime/answer_code.py): the answer shown
        without it (its code is shown where it runs), the output for the model to read
        next. False when nothing ran."""
        block = code.take(response.text, finished=response.finish_reason != "length")
        if block is None:
            return False
        if response.text:
            kept = without_block(response.text, block)
            self.texts[-1:] = [kept] if kept else []
        self._show_before_runs()
        self.messages.append(await code.run(
            block, offered=[t.name for t in self._offered()], step=step,
            skill=self.choice.active_folder(), skills=self.choice))
        return True

    def _show_before_runs(self) -> None:
        """The model's words so far shown finished, before what its step runs is shown
        under them (its next words come below that, in a display of their own): the
        person reads the answer in the order it happened."""
        text = "\n\n".join(self.texts[self.shown:])
        if text or (self._view is not None and self._view.streamed):
            self.sink.show(Reply(text))
        self.shown = len(self.texts)

    def _say_if_it_cannot_run(self) -> None:
        """A model that cannot call tools, following a skill that runs code it cannot
        run (a shell's; Python runs from its answer where the policy offers it): one line
        saying the work will be described, not done (never a silent description)."""
        skill = self.choice.active
        if self.model.supports_tools or skill is None:
            return
        needs = execution_needs(skill.body, skill.requires_tools, skill.narrowed_tools)
        if self._offers_code():
            needs = tuple(n for n in needs if n != PYTHON)
        if needs:
            self.sink.show(Notice(cannot_run_notice(skill.name, needs, self.model.name)))

    def _reading(self, tokens: int) -> None:
        """Before a long prompt is read on this machine: what, and about how long."""
        if tokens < READING_NOTICE_AT:
            return
        active = self.choice.active
        self.sink.show(Notice(reading_notice(active.name if active is not None else None,
                                             tokens, tokens / READ_PER_SECOND)))

    def stopped(self) -> list[dict[str, Any]]:
        """What a turn the person stopped leaves in the history: their message, and the
        answer as far as they saw it, marked as stopped (a follow-up such as "make it
        shorter" then means that answer, not the one before it)."""
        streamed = self._view.current if self._view is not None else ""
        shown = "\n\n".join(t for t in [*self.texts, streamed] if t).strip()
        marker = STOPPED_MARK if shown else STOPPED_BEFORE
        return [self.request.user_message,
                {"role": "assistant", "content": f"{shown}\n\n{marker}".strip()}]

    async def select(self) -> Skill | None:
        """Only the selection of `run`, for measuring it (`lily eval`): a model without
        tools declares; a model that calls tools makes its first call, and of its tool
        calls only those of the selection tools (offered while it chooses: load_skill)
        run, through the gate. Nothing is answered; the skill selected, or None."""
        if not self.model.supports_tools:
            await self._declare()
            return self.choice.loaded
        offered = self._offered()
        selecting = {t.name for t in offered if t.offered == "while_selecting"}
        response = await self._call(
            ChatRequest(list(self.request.messages), [t.json_schema() for t in offered]),
            lambda _text: None, 1)
        for call in response.tool_calls:
            if call.name in selecting:
                await self.gate.model_call(
                    self.sink, call.name, call.arguments, offered=[t.name for t in offered],
                    step=1, skill=None, skills=self.choice)
        self._record_tool_selection()
        return self.choice.loaded

    def _record_tool_selection(self) -> None:
        """For a model that calls tools and chose its own skill: a `skill_selection`
        event saying what it loaded (load_skill), and, when the catalog was over its
        budget, the request's shortlist that was listed whatever it cost."""
        if not self.model.supports_tools or not self.choice.selecting or self.calls == 0:
            return
        loaded = self.choice.loaded
        short = None
        if self.request.catalog is not None and self.request.catalog.omitted:
            short = request_shortlist(self.choice.snapshot, self.ranker,
                                      str(self.request.user_message["content"]))
        listed = ("the request's shortlist and what else fit the catalog's budget"
                  if short is not None else "the whole catalog")
        self.log.emit(SkillSelection(
            outcome="selected" if loaded is not None else "none",
            name=loaded.name if loaded is not None else None,
            shortlist=short.record() if short is not None else None, decided_by="model",
            reason=(f"the model called load_skill, shown {listed}" if loaded is not None
                    else f"the model loaded no skill, shown {listed}")))

    def _offered(self) -> list[Tool]:
        """The tools the model is offered now: the policy's, in this state of the
        request (choosing its skill, a skill active and narrowing or refusing them)."""
        active = self.choice.active
        return self.gate.policy.model_tools(
            self.gate.registry, active.narrowed_tools if active else None,
            skill_active=active is not None, selecting=self.choice.selecting,
            refused=active.refused_tools if active else frozenset())

    # --- model calls -------------------------------------------------------------------

    async def _call(self, request: ChatRequest, on_text: Callable[[str], None],
                    step: int | str) -> ChatResponse:
        """One model call, logged as a `model_call` event, counted for the footer."""
        started = time.perf_counter()
        outcome: CallOutcome = "error"  # a bug in Lily, unless one of the cases below
        # What replay feeds back instead of a model (llm/records.py).
        recorded: dict[str, Any] = {}
        try:
            response = await self.model.complete(request, on_text)
            outcome = "ok"
            recorded = response_record(response)
        except ModelError as exc:
            outcome = exc.kind
            recorded = {"error": error_record(exc)}
            raise
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        finally:
            self.log.emit(ModelCall(
                model=self.model.name, step=step, outcome=outcome,
                latency_ms=round((time.perf_counter() - started) * 1000, 1),
                context_window=self.model.context_window,
                supports_tools=self.model.supports_tools, **recorded))
        self.calls += 1
        self.tokens_in += response.usage.prompt_tokens
        self.tokens_out += response.usage.completion_tokens
        self.last_context = response.usage.prompt_tokens + response.usage.completion_tokens
        self.cost = None if self.cost is None or response.cost is None \
            else self.cost + response.cost
        return response

    async def _declare(self) -> None:
        """For a model that cannot call tools: the request's shortlist decides, or the
        model declares among its near-equal best matches (prompting/selection.py); a
        selected skill's SKILL.md (its opening, for a small window) follows."""
        if self.model.supports_tools or not self.choice.selecting:
            return
        snapshot = self.choice.snapshot
        messages = self.request.messages
        short = await self._shortlist()
        selection, reply = await self._decide(short)
        skill = snapshot.get(selection.name or "")
        # A long SKILL.md: its opening only, for a small window (said so, `left`).
        opening, left = (bounded_body(skill_body(skill),
                                      skill_body_budget(self.model.context_window))
                         if skill is not None else ("", 0))
        body = declared_skill_message(skill.name, opening, messages) \
            if skill is not None else None
        if selection.outcome == "selected" and body is not None and \
                not self._fits([*messages, body]):
            selection = dataclasses.replace(
                selection, outcome="too_long",
                detail=f"the SKILL.md of '{selection.name}' does not fit the model's "
                       f"{self.model.context_window:,}-token context window")
        decided_by: DecidedBy = "model" if len(short.candidates) > 1 else "ranker"
        self.log.emit(SkillSelection(outcome=selection.outcome, name=selection.name,
                                     detail=selection.detail or None, reply=reply[:200],
                                     shortlist=short.record(), decided_by=decided_by,
                                     reason=short.reason()))
        if selection.outcome == "selected" and skill is not None and body is not None:
            self.choice.activate(skill, skill_chosen(
                skill.name, "near-equal" if decided_by == "model" else "ranker",
                short.ranked[0].score, left))
            # Only the body (or the line pointing back to it) follows the shared prefix:
            # a declaration's JSON is not kept (a small model would otherwise echo it).
            self.messages.append(body)
        elif selection.outcome != "none":
            self.sink.show(Notice(selection_refused(selection.detail)))

    async def _shortlist(self) -> Shortlist:
        """The request's shortlist, ranked off the event loop (the stop button stays
        live, and stops the encoding with `stop`): the first ranking of a snapshot by
        meaning may encode its skills, once a machine, which for many skills takes a
        while, and says so first."""
        await announce_encoding(self.ranker, self.sink)
        return await asyncio.to_thread(request_shortlist, self.choice.snapshot, self.ranker,
                                       str(self.request.user_message["content"]), self.stop)

    async def _decide(self, short: Shortlist) -> tuple[Selection, str]:
        """The shortlist's decision (no candidate: none; one: that skill), or the model's
        declaration among several near-equal candidates; and the model's reply."""
        if not short.candidates:
            return Selection("none"), ""
        if len(short.candidates) == 1:
            return Selection("selected", name=short.candidates[0]), ""
        skills = [s for s in map(self.choice.snapshot.get, short.candidates) if s is not None]
        # The declaration reads the conversation first (the answer after it reads only
        # what differs): a long read is said here, or the person waits without a word.
        # Offered the code block, the answer reads the code rules and the worked example
        # before the conversation: so does the declaration, or the answer re-reads it all.
        read = offer_code(self.request.messages) if self._offers_code() \
            else list(self.request.messages)
        request = ChatRequest([*read, candidates_message(skills)],
                              json_schema=selection_schema(short.candidates),
                              max_tokens=SELECTION_MAX_TOKENS, on_reading=self._reading)
        response = await self._call(request, lambda _text: None, "select")
        return parse_selection(response.text, short.candidates), response.text

    def _fits(self, messages: list[dict[str, Any]]) -> bool:
        window = self.model.context_window
        if window is None:
            return True
        reserve = answer_reserve(window, self.settings.max_tokens)
        return estimate_tokens(messages) <= window - reserve

    def footer(self) -> str | None:
        """The answer's footer (the `footer` setting), and whatever it is, the note that
        full auto is on."""
        parts = [footer(self.model.name, self.tokens_in, self.tokens_out, self.calls,
                        self.model.context_window, self.last_context, self.cost)
                 ] if self.settings.footer else []
        if self.gate.policy.auto:
            parts.append(FULL_AUTO_NOTE)
        return " · ".join(parts) or None
