"""A turn's request, sized to the model: the catalog within its budget, the history within
the context window; and the notices that tell the person what was left out (never silent)."""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass

from lily_kernel.display.messages import catalog_notice, trimmed_notice
from lily_kernel.errors import ModelError, ModelFault
from lily_kernel.llm.base import ChatModel
from lily_kernel.prompting import (
    ModelRequest,
    build_catalog,
    build_model_request,
    build_system_prompt,
)
from lily_kernel.prompting.budget import (
    answer_reserve,
    catalog_budget,
    fit_messages,
    skill_body_budget,
)
from lily_kernel.prompting.selection import request_shortlist
from lily_kernel.session import Session
from lily_kernel.skills import Skill

__all__ = ["DraftRequest", "draft_turn_request", "fit_request"]


def fit_request(session: Session, model: ChatModel, request: ModelRequest
                ) -> tuple[ModelRequest, str | None]:
    """The request with the oldest complete turns left out when the history would
    overflow the model's context window, and the notice saying so."""
    window = model.context_window
    if window is None:
        return request, None
    reserve = answer_reserve(window, session.model_config.max_tokens)
    fitted = fit_messages(request.messages, window, reserve)
    if not fitted.fits:
        raise ModelError(
            ModelFault.CONTEXT_WINDOW,
            f"this message does not fit the model's {window:,}-token context window "
            f"(about {fitted.estimated_tokens:,} tokens with the system context). Shorten "
            "it, or use a model with a larger context.")
    notice = trimmed_notice(fitted.dropped_turns, window) if fitted.dropped_turns else None
    return dataclasses.replace(request, messages=fitted.messages), notice


@dataclass(frozen=True)
class DraftRequest:
    """A turn's request, its catalog sized to the model's context window (or the skill
    the person forced), before the request's shortlist: when the catalog is over its
    budget (`ranks`), `finish` ranks the skills to list the request's best matches
    whatever they cost. Two steps, so that the runtime can say beforehand what a first
    ranking will cost."""

    session: Session
    model: ChatModel
    text: str
    forced: Skill | None
    configured: int  # catalog_max_chars
    budget: int  # what the catalog may take of this model's window, in characters
    request: ModelRequest  # the catalog as the budget allows

    @property
    def ranks(self) -> bool:
        """Whether `finish` ranks the snapshot's skills against the request."""
        return self.request.catalog is not None and bool(self.request.catalog.omitted)

    def finish(self, stop: threading.Event | None = None) -> tuple[ModelRequest, str | None]:
        """The turn's request, and the notice naming skills the catalog left out. Raises
        EncodingStopped when `stop` is set while the snapshot's skills are encoded."""
        if not self.ranks:
            return self.request, None
        # Over budget: the request's shortlist is listed whatever it costs.
        short = request_shortlist(self.session.skill_snapshot, self.session.ranker(),
                                  self.text, stop)
        kept = tuple(r.name for r in short.ranked)
        request = _request(self.session, self.model, self.text, self.forced, self.budget,
                           frozenset(kept))
        assert request.catalog is not None
        return request, catalog_notice(request.catalog.omitted, kept, self.budget,
                                        self.configured, self.model.context_window)


def draft_turn_request(session: Session, catalog_max_chars: int, model: ChatModel,
                       text: str, forced: Skill | None) -> DraftRequest:
    """The turn's request before its shortlist (ranks nothing)."""
    empty = build_catalog((), catalog_max_chars)  # the catalog's frame, without entries
    without_catalog = build_system_prompt(session.persona, empty,
                                          tool_calls=model.supports_tools)
    budget = catalog_budget(model.context_window, catalog_max_chars, without_catalog)
    return DraftRequest(session, model, text, forced, catalog_max_chars, budget,
                        _request(session, model, text, forced, budget, frozenset()))


def _request(session: Session, model: ChatModel, text: str, forced: Skill | None,
             budget: int, keep: frozenset[str]) -> ModelRequest:
    """The request with a catalog of `budget` characters, and the skills in `keep`
    listed in it whatever they cost."""
    return build_model_request(
        persona=session.persona, snapshot=session.skill_snapshot,
        history=session.conversation_state.messages, user_text=text,
        catalog_max_chars=budget, forced_skill=forced, tool_calls=model.supports_tools,
        keep=keep, body_max_chars=skill_body_budget(model.context_window))
