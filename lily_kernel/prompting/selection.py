"""Skill selection for models that cannot call tools: the request's shortlist, and the
declaration among its near-equal best matches.

The ranker (skills/ranker.py) gives each request its shortlist. Its best match decides
when it is clear: none scoring RELEVANT_SCORE or more means no skill, and one match
ahead of the others by more than MARGIN is that skill, with no model step. Only where
several matches are within MARGIN of the best does the model declare, in one constrained
step after the person's message: a JSON object naming one of those candidates, listed
in a message of their own, or none. (Measured on the eval set's tuning part: the
embedded model choosing among the first three was right for 35 of 85 requests, the
ranker's best for 60: benchmarks/model_choice.py, docs/skills.md.) Pure:
rankings in, a `Shortlist` out; the reply in, a `Selection` out.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lily_kernel.prompting.system import cut_entry
from lily_kernel.skills import RELEVANT_SCORE, Ranked, Skill, SkillRanker, SkillSnapshot

if TYPE_CHECKING:
    from lily_kernel.events import SelectionOutcome

__all__ = [
    "MARGIN",
    "SELECTION_MAX_TOKENS",
    "SHORTLIST",
    "Selection",
    "Shortlist",
    "candidates_message",
    "parse_selection",
    "request_shortlist",
    "selection_schema",
    "shortlist",
]

SELECTION_MAX_TOKENS = 64
SHORTLIST = 5  # the request's best matches, as the event records them
MARGIN = 0.1  # matches within 10% of the best one's score are near-equal: the model picks


@dataclass(frozen=True)
class Shortlist:
    """A request's best matches (at most SHORTLIST, model-visible skills only), and the
    candidates among them: those scoring RELEVANT_SCORE or more, within MARGIN of the
    best. No candidate: no skill; one: that skill; several: the model declares."""

    ranked: tuple[Ranked, ...]
    candidates: tuple[str, ...]

    def record(self) -> list[dict[str, Any]]:
        """The shortlist as the `skill_selection` event keeps it."""
        return [{"name": r.name, "score": r.score} for r in self.ranked]

    def reason(self) -> str:
        """Why the ranker's decision is what it is, for the event and the person."""
        if not self.ranked:
            return "no skill matches the request's words"
        best = self.ranked[0]
        if not self.candidates:
            return (f"the best match, {best.name}, scores {best.score:.2f}, under "
                    f"{RELEVANT_SCORE:.2f}: no skill fits")
        if len(self.candidates) == 1:
            second = (f"; the next, {self.ranked[1].name}, {self.ranked[1].score:.2f}"
                      if len(self.ranked) > 1 else "")
            return f"{best.name} scores {best.score:.2f}{second}"
        return (f"{len(self.candidates)} matches within {MARGIN:.0%} of the best "
                f"({best.score:.2f}): the model was asked")


def shortlist(ranked: list[Ranked], visible: set[str]) -> Shortlist:
    """The shortlist of a request's ranking (best first), among the `visible` skills."""
    best = tuple(r for r in ranked if r.name in visible)[:SHORTLIST]
    top = best[0].score if best else 0.0
    candidates = tuple(r.name for r in best
                       if r.score >= RELEVANT_SCORE and r.score >= top * (1 - MARGIN))
    return Shortlist(best, candidates)


def request_shortlist(snapshot: SkillSnapshot, ranker: SkillRanker, text: str,
                      stop: threading.Event | None = None) -> Shortlist:
    """The shortlist of a request: its ranking by the snapshot's ranker, among the
    skills the model may select (not those only the person may invoke). Raises
    EncodingStopped when `stop` is set while the snapshot's skills are encoded."""
    visible = {s.name for s in snapshot.skills if s.model_visible}
    return shortlist(ranker.rank(text, stop=stop), visible)


def candidates_message(skills: list[Skill]) -> dict[str, Any]:
    """What the model reads before declaring: the near-equal candidates, one line each
    (a summary cut as the catalog cuts it)."""
    lines = "\n".join(f"- {s.name}: {cut_entry(' '.join(s.summary.split()))}" for s in skills)
    return {"role": "user",
            "content": f"Skills that may fit my message:\n{lines}\nName the one that fits, "
                       "or null."}


def selection_schema(names: tuple[str, ...]) -> dict[str, Any]:
    """A JSON object with one key, `skill`: a listed name or null."""
    return {
        "type": "object",
        "properties": {"skill": {"enum": [*names, None]}},
        "required": ["skill"],
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class Selection:
    """What the declaration said: a skill, none, or something that is not a choice."""

    # too_long: a listed skill whose SKILL.md would overflow the context window (decided
    # by the conversation, which knows the window).
    outcome: SelectionOutcome
    name: str | None = None
    detail: str = ""


def parse_selection(text: str, listed: tuple[str, ...]) -> Selection:
    """Read the model's declaration; anything but a listed name or null is not a choice."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        return Selection("malformed", detail=f"not JSON ({exc})")
    if not isinstance(data, dict) or "skill" not in data:
        return Selection("malformed", detail='not an object with a "skill" key')
    name = data["skill"]
    if name is None or (isinstance(name, str) and name.strip().lower() in ("", "none", "null")):
        return Selection("none")
    if not isinstance(name, str):
        return Selection("malformed", detail=f'"skill" is not a name: {name!r}')
    if name not in listed:
        return Selection("unknown", name=name, detail=f"no skill named {name!r} in the catalog")
    return Selection("selected", name=name)
