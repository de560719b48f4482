"""A turn's request, sized to the model: the catalog within its budget, the history within
the context window; and the notices that tell the person what was left out (never silent)."""

from __future__ import annotations

import dataclasses

from lily_kernel.errors import ModelError, ModelFault
from lily_kernel.llm.base import ChatModel
from lily_kernel.prompting import (
    ModelRequest,
    build_catalog,
    build_model_request,
    build_system_prompt,
)
from lily_kernel.prompting.budget import answer_reserve, catalog_budget, fit_messages
from lily_kernel.prompting.selection import request_shortlist
from lily_kernel.session import Session
from lily_kernel.skills import Skill

__all__ = ["build_turn_request", "fit_request"]


def _catalog_notice(omitted: tuple[str, ...], kept: tuple[str, ...], budget: int,
                    configured: int, window: int | None) -> str:
    shown = ", ".join(omitted[:10]) + (f" and {len(omitted) - 10} more"
                                       if len(omitted) > 10 else "")
    limit = (f"catalog_max_chars = {configured:,}" if budget == configured else
             f"{budget:,} characters, what the model's {window:,}-token "
             "context window leaves for it")
    best = (f" The request's best matches are listed: {', '.join(kept)}." if kept else "")
    return (f"{len(omitted)} skill(s) left out of the model's catalog (over {limit}): "
            f"{shown}. They still work with /skill.{best}")


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
    notice = (f"{fitted.dropped_turns} earlier turn(s) left out of what the model reads, "
              f"to fit its {window:,}-token context window." if fitted.dropped_turns else None)
    return dataclasses.replace(request, messages=fitted.messages), notice


def build_turn_request(session: Session, catalog_max_chars: int, model: ChatModel, text: str,
                       forced: Skill | None) -> tuple[ModelRequest, str | None]:
    """The turn's request: the catalog sized to the model's context window, or the
    skill the person forced; and the notice naming skills the catalog left out."""
    empty = build_catalog((), catalog_max_chars)  # the catalog's frame, without entries
    without_catalog = build_system_prompt(session.persona, empty,
                                          tool_calls=model.supports_tools)
    budget = catalog_budget(model.context_window, catalog_max_chars, without_catalog)
    snapshot = session.skill_snapshot

    def build(keep: frozenset[str]) -> ModelRequest:
        return build_model_request(
            persona=session.persona, snapshot=snapshot,
            history=session.conversation_state.messages, user_text=text,
            catalog_max_chars=budget, forced_skill=forced, tool_calls=model.supports_tools,
            keep=keep)

    request = build(frozenset())
    if request.catalog is None or not request.catalog.omitted:
        return request, None
    # Over budget: the request's shortlist is listed whatever it costs.
    kept = tuple(r.name for r in request_shortlist(snapshot, text).ranked)
    request = build(frozenset(kept))
    assert request.catalog is not None
    return request, _catalog_notice(request.catalog.omitted, kept, budget,
                                    catalog_max_chars, model.context_window)
