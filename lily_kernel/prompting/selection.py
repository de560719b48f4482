"""Skill selection by structured declaration, for models that cannot call tools.

One constrained step after the person's message: the model answers a JSON object that
names one skill of the catalog or none. The step is the answer's own request (system
context, history, the person's message) with a JSON schema, and no question of its own:
the system rules say what the step is for and the schema says the rest. So the answer
that follows reuses everything the model read for it, and each turn reads the person's
message once. Pure: the catalog in, a schema out; the reply in, a `Selection` out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["SELECTION_MAX_TOKENS", "Selection", "parse_selection", "selection_schema"]

SELECTION_MAX_TOKENS = 64

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
    outcome: Literal["selected", "none", "unknown", "malformed", "too_long"]
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
