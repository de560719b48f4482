"""prompting/budget.py: sizes in, decisions out (no model)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from lily_kernel.prompting.budget import (
    CHARS_PER_TOKEN,
    MESSAGE_OVERHEAD,
    answer_reserve,
    catalog_budget,
    estimate_tokens,
    fit_messages,
)


def m(role: str, chars: int, tag: str = "") -> dict[str, Any]:
    return {"role": role, "content": (tag + "x" * chars)[:chars] if chars else tag}


def test_estimate_counts_characters_and_a_per_message_overhead() -> None:
    assert estimate_tokens([m("user", 30)]) == 30 // CHARS_PER_TOKEN + MESSAGE_OVERHEAD
    assert estimate_tokens([m("user", 31)]) == 11 + MESSAGE_OVERHEAD  # rounded up
    call = {"role": "assistant", "content": None,
            "tool_calls": [{"function": {"name": "read", "arguments": "x" * 9}}]}
    assert estimate_tokens([call]) == 3 + MESSAGE_OVERHEAD


def test_reserve_and_catalog_budget() -> None:
    assert answer_reserve(8192, None) == 2048
    assert answer_reserve(1000, None) == 250
    assert answer_reserve(8192, 300) == 300
    assert answer_reserve(1000, 900) == 500  # never more than half the window
    assert catalog_budget(None, 30_000, "x" * 100) == 30_000
    assert catalog_budget(1000, 30_000, "x" * 100) == 500 * CHARS_PER_TOKEN - 100
    assert catalog_budget(1000, 30_000, "x" * 5000) == 0


def test_everything_fits_and_nothing_is_dropped() -> None:
    messages = (m("system", 30), m("user", 30), m("assistant", 30), m("user", 30))
    fitted = fit_messages(messages, 1000, 100)
    assert fitted.messages == messages and fitted.dropped_turns == 0 and fitted.fits
    assert fit_messages(messages, None, 0).messages == messages


def test_the_oldest_whole_turns_go_first() -> None:
    history = [m("user", 300, "q1"), m("assistant", 300, "a1"), m("tool", 300, "t1"),
               m("assistant", 300, "a1b"), m("user", 300, "q2"), m("assistant", 300, "a2")]
    messages = (m("system", 60), *history, m("user", 60, "now"))
    # Room for system + one turn + the message, not two turns.
    room = estimate_tokens([messages[0], *history[4:], messages[-1]])
    fitted = fit_messages(messages, room + 10, 10)
    assert fitted.dropped_turns == 1 and fitted.fits
    assert [x["content"][:3] for x in fitted.messages] == ["xxx", "q2x", "a2x", "now"]


def test_a_skill_body_after_its_question_stays_in_the_same_turn() -> None:
    history = [m("user", 300, "q1"), m("user", 300, "SKILL.md"), m("assistant", 300, "a1"),
               m("user", 300, "q2"), m("assistant", 300, "a2")]
    messages = (m("system", 60), *history, m("user", 60, "now"))
    room = estimate_tokens([messages[0], *history[3:], messages[-1]])
    fitted = fit_messages(messages, room + 10, 10)
    assert fitted.dropped_turns == 1  # q1, its SKILL.md and a1 went together
    assert [x["content"][:2] for x in fitted.messages] == ["xx", "q2", "a2", "no"]


def test_all_turns_go_before_the_message_is_refused() -> None:
    history = [m("assistant", 90, "orphan"), m("user", 300, "q1"), m("assistant", 300, "a1")]
    messages = (m("system", 60), *history, m("user", 60, "now"))
    fitted = fit_messages(messages, estimate_tokens([messages[0], messages[-1]]) + 5, 5)
    assert fitted.dropped_turns == 1 and fitted.fits
    assert fitted.messages == (messages[0], messages[-1])  # the orphan went with q1
    too_long = fit_messages((m("system", 60), m("user", 3000)), 200, 50)
    assert not too_long.fits and too_long.dropped_turns == 0


def test_a_full_history_is_cut_at_checkpoints_that_later_turns_do_not_move() -> None:
    """40 turns through an 8,192-token window: once the history no longer fits, the
    first message the model reads changes only every few turns (a quarter of the room
    at a time), so a model that keeps its evaluated prefix reads the new turn alone in
    between; cutting one turn at a time changed it at every turn."""
    system, window, reserve = m("system", 3000), 8192, 2048
    history: list[dict[str, Any]] = []
    firsts, dropped = [], []
    for turn in range(40):
        new = m("user", 300, f"q{turn}")
        fitted = fit_messages((system, *history, new), window, reserve)
        assert fitted.fits and fitted.estimated_tokens <= window - reserve
        if fitted.dropped_turns:
            firsts.append(fitted.messages[1]["content"][:4])
            dropped.append(fitted.dropped_turns)
        history += [new, m("assistant", 1500, f"a{turn}")]
    assert len(firsts) >= 25  # the history was full for most of the conversation
    changes = sum(a != b for a, b in pairwise(firsts))
    assert changes <= len(firsts) // 2, (changes, firsts)  # one turn at a time: 30 of 31
    assert dropped == sorted(dropped)  # a cut never moves back
