"""What Lily tells the person in the runtime's own words, worded once: the model it
answers with (or that none is configured), what a request's catalog left out, an
answer's footer, a long read or a first ranking announced, an answer given again from
the record or a recorded conversation taken up. Pure: facts in, text out."""

from __future__ import annotations

from lily_kernel.config import EMBEDDED_MODEL

__all__ = ["EMBEDDED_NOTICE", "FULL_AUTO_NOTE", "KEY_PART_NAMES", "NO_MODEL_MESSAGE",
           "PYTHON_CELL_HINT", "cannot_run_notice", "catalog_notice", "continued_notice",
           "diverged_notice", "encoding_notice", "footer", "left_out_notice",
           "not_replayed_notice", "reading_notice", "recorded_time", "replayed_notice",
           "trimmed_notice"]

# A short first line and a short list: one long line wrapped mid-word in JupyterLab.
NO_MODEL_MESSAGE = (
    "no model configured.\n"
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


def catalog_notice(omitted: tuple[str, ...], kept: tuple[str, ...], budget: int,
                   configured: int, window: int | None) -> str:
    """The skills a catalog over its budget left out, and the request's best matches it
    listed whatever they cost."""
    shown = ", ".join(omitted[:10]) + (f" and {len(omitted) - 10} more"
                                       if len(omitted) > 10 else "")
    limit = (f"catalog_max_chars = {configured:,}" if budget == configured else
             f"{budget:,} characters, what the model's {window:,}-token "
             "context window leaves for it")
    best = (f" The request's best matches are listed: {', '.join(kept)}." if kept else "")
    return (f"{len(omitted)} skill(s) left out of the model's catalog (over {limit}): "
            f"{shown}. They still work with /skill.{best}")


def trimmed_notice(turns: int, window: int) -> str:
    return (f"{turns} earlier turn(s) left out of what the model reads, to fit its "
            f"{window:,}-token context window.")


def encoding_notice(count: int, seconds: float) -> str:
    return (f"Reading what {count:,} skills are about, once for this machine (about "
            f"{max(1, round(seconds))} s; kept in Lily's cache for every session).")


def reading_notice(skill: str | None, tokens: int, seconds: float) -> str:
    what = (f"the SKILL.md of '{skill}' and the conversation" if skill is not None
            else "the conversation")
    return (f"Reading {what} first: {tokens:,} tokens, about {max(1, round(seconds))} s "
            "on this machine.")


def footer(model: str, tokens_in: int, tokens_out: int, calls: int, window: int | None,
           last_context: int, cost: float | None) -> str:
    """Model, tokens in and out, share of the context window, cost where known. With
    several model calls (a skill's declaration, tool steps) the tokens are their sum,
    said so, and the share is the last call's: each call reads the window anew."""
    several = f" over {calls} model calls" if calls > 1 else ""
    parts = [model, f"{tokens_in:,} tokens in, {tokens_out:,} out{several}"]
    if window:
        last = " (the last call)" if calls > 1 else ""
        parts.append(f"{100 * last_context / window:.0f}% of the {window:,}-token "
                     f"context{last}")
    if cost == 0.0:
        parts.append("no cost")
    elif cost is not None:
        parts.append(f"${cost:.4f}")
    return " · ".join(parts)


# Said above a chat cell that is plainly Python (it still goes to the model).
PYTHON_CELL_HINT = ("This cell looks like Python: it goes to the model as a message. To run it "
                    "yourself, start the cell with /python.")


def cannot_run_notice(skill: str, needs: tuple[str, ...], model: str) -> str:
    """One line when the chosen skill runs code and the model cannot call tools."""
    return (f"Skill {skill} runs code ({' and '.join(needs)}), and this model ({model}) "
            "cannot call tools: it can only describe the work. To have it done, configure "
            "a model that calls tools (LILY_MODEL, or model: in lily.yaml; "
            "docs/execution.md), or run code yourself with /python.")


# Under an answer of a model that cannot call tools whose code did not run: one block
# per request runs, the first answer's (runtime/answer_code.py).
CODE_NOT_RUN_NOTICE = ("The code in this answer did not run: Lily runs one code block per "
                       "request, the model's first. To run it, copy it into /python.")


# Under every answer while the profile `auto` is on (the footer setting off or not).
FULL_AUTO_NOTE = "full auto: code runs without asking (/policy ask)"


def recorded_time(ts: str) -> str:
    """An event's time as the person reads it: `2026-05-02 10:31 UTC`."""
    day, _, clock = ts.partition("T")
    return f"{day} {clock[:5]} UTC" if clock[:5] else day


def replayed_notice(model: str | None, ts: str) -> str:
    return (f"Replayed from the record: the answer {model or 'the model'} gave on "
            f"{recorded_time(ts)}, with no model call. /rerun asks the model afresh.")


def diverged_notice(step: int) -> str:
    if step == 1:
        return ("Not replayed: the record has this turn, but the model was asked otherwise "
                "then (Lily's instructions or a skill's text changed); the model answers.")
    return (f"A tool's result differs from the record (step {step}): the model answers "
            "from there.")


def continued_notice(ts: str, turns: int) -> str:
    return (f"Continuing this notebook's conversation of {recorded_time(ts)}: the model "
            f"reads its {turns} earlier turn(s) again. /new starts afresh.")


def left_out_notice(texts: list[str], why: str = "their cells are no longer in the "
                    "notebook") -> str:
    shown = ", ".join(repr(t if len(t) <= 40 else t[:39] + "…") for t in texts[:5])
    more = f" and {len(texts) - 5} more" if len(texts) > 5 else ""
    return f"Left out of the conversation, {why}: {shown}{more}."


# What each part of a turn's key is, as the person reads it (record/key.py KEY_PARTS).
KEY_PART_NAMES = {"history": "the conversation so far", "request": "the request",
                  "model": "the model or its settings", "skills": "the skills",
                  "persona": "the persona", "tools": "the tools the model may use"}


def not_replayed_notice(parts: list[str], ts: str) -> str:
    what = ", ".join(KEY_PART_NAMES.get(p, p) for p in parts)
    return (f"Not answered from the record: this turn was recorded on {recorded_time(ts)}, "
            f"but {what} differ(s) now; the model answers.")
