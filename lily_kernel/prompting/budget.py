"""Fit a request into the model's context window. Pure: sizes in, decisions out.

Sizes are estimated from characters (CHARS_PER_TOKEN, deliberately low so the estimate
errs on the long side for English, code and JSON; not for CJK text, where the model's own
check then refuses a prompt too long for it) rather than counted with the model's tokenizer: the budget is
then the same for every model and the same on every machine, and needs no model loaded.

- The system context (persona, rules, catalog) may take at most SYSTEM_SHARE of the
  window; the catalog gets what the persona and rules leave of that.
- The answer keeps a reserve (the configured max_tokens, else ANSWER_SHARE of the window).
- The history gets the rest: the oldest complete turns are left out until it fits,
  never part of a turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "BODY_SHARE",
    "CHARS_PER_TOKEN",
    "FittedMessages",
    "answer_reserve",
    "catalog_budget",
    "estimate_tokens",
    "fit_messages",
    "skill_body_budget",
]

CHARS_PER_TOKEN = 3  # English runs ~4 characters a token; 3 leaves room for code and JSON
SYSTEM_SHARE = 0.5
ANSWER_SHARE = 0.25
ANSWER_RESERVE_MAX = 2048
MESSAGE_OVERHEAD = 8  # role markers and separators a chat template adds per message
# A skill's SKILL.md, however it reaches the model (selected, declared, forced by the
# person), may take this share of a small window (512 of the embedded model's 8,192
# tokens): read at ~300 tokens/s on 2 cores, its answer starts within ~2 s. A larger
# window (a remote model's) gives it a quarter.
BODY_SHARE = 1 / 16
SMALL_WINDOW = 16_384
LARGE_BODY_SHARE = 1 / 4


def estimate_tokens(messages: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> int:
    total = 0
    for message in messages:
        text = message.get("content") or ""
        for call in message.get("tool_calls") or ():
            text += str(call.get("function", {}).get("arguments", ""))
        total += -(-len(text) // CHARS_PER_TOKEN) + MESSAGE_OVERHEAD
    return total


def answer_reserve(window: int, max_tokens: int | None) -> int:
    """Tokens kept free for the answer."""
    if max_tokens is not None:
        return min(max_tokens, window // 2)
    return min(ANSWER_RESERVE_MAX, int(window * ANSWER_SHARE))


def skill_body_budget(window: int | None) -> int | None:
    """Characters a skill's SKILL.md may take of the model's window, on every path (None:
    no bound, the window unknown): the one rule for fitting a skill into the window."""
    if window is None:
        return None
    share = BODY_SHARE if window <= SMALL_WINDOW else LARGE_BODY_SHARE
    return int(window * share) * CHARS_PER_TOKEN


def catalog_budget(window: int | None, configured: int, system_without_catalog: str) -> int:
    """Characters the catalog may take: the configured cap, lowered to fit the window."""
    if window is None:
        return configured
    room = int(window * SYSTEM_SHARE) * CHARS_PER_TOKEN - len(system_without_catalog)
    return max(0, min(configured, room))


@dataclass(frozen=True)
class FittedMessages:
    """The messages to send, and how many earlier turns were left out to fit."""

    messages: tuple[dict[str, Any], ...]
    dropped_turns: int
    estimated_tokens: int
    fits: bool


def _turn_starts(history: list[dict[str, Any]]) -> list[int]:
    """Where each turn begins: a user message that does not follow another one (a
    skill's SKILL.md, given after a declaration, is a user message of the same turn)."""
    return [i for i, m in enumerate(history) if m.get("role") == "user"
            and (i == 0 or history[i - 1].get("role") != "user")]


def _checkpoints(history: list[dict[str, Any]], starts: list[int], step: int) -> list[int]:
    """The turns (indexes into `starts`) where the history may be cut: the first turn
    after each `step` tokens of history, counted from its beginning. They depend on the
    history before them only, so a later turn never moves them."""
    marks, mark, before = [], step, 0
    for index, start in enumerate(starts[1:], 1):
        before += estimate_tokens(history[starts[index - 1]:start])
        if before >= mark:
            marks.append(index)
            mark = (before // step + 1) * step
    return marks


def fit_messages(
    messages: tuple[dict[str, Any], ...], window: int | None, reserve: int
) -> FittedMessages:
    """`messages` is system, history, new user message (in that order). Leave out the
    oldest complete turns of the history until the whole fits in `window - reserve`
    (anything before the first turn goes with it). `fits` is False when even the system
    context and the new message alone do not fit.

    The history is cut at fixed checkpoints, a quarter of the room apart, not one turn
    at a time: the turns after a cut keep the same beginning until the next checkpoint
    is needed, so a model that keeps its evaluated prefix (llama.cpp) reads only the new
    turn, instead of the whole history again at every turn once it is full."""
    total = estimate_tokens(messages)
    if window is None:
        return FittedMessages(messages, 0, total, True)
    system, history, last = messages[0], list(messages[1:-1]), messages[-1]
    limit = window - reserve
    if total <= limit:
        return FittedMessages(messages, 0, total, True)
    starts = _turn_starts(history)
    cuts = [*_checkpoints(history, starts, max(1, limit // 4)), len(starts)]
    dropped = cut = 0
    for dropped in cuts:  # the first checkpoint that fits, else every turn left out
        cut = starts[dropped] if dropped < len(starts) else len(history)
        total = estimate_tokens([system, *history[cut:], last])
        if total <= limit:
            break
    return FittedMessages((system, *history[cut:], last), dropped, total, total <= limit)
