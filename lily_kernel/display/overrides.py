"""What the person reads of a skill's overrides: the model it asked for, a tool it
pre-approved (skills/overrides.py decides both)."""

from __future__ import annotations

__all__ = ["model_not_allowed", "model_used", "pre_approved"]


def model_used(skill: str, model: str) -> str:
    """A skill's `model:` the person's LILY_SKILL_MODELS allows: it answers this turn."""
    return f"Skill {skill} runs on {model} (its model: allowed by LILY_SKILL_MODELS)"


def model_not_allowed(skill: str, wanted: str, model: str) -> str:
    """A skill's `model:` the person's settings do not allow: their own model answers."""
    return (f"Skill {skill} asks for the model {wanted}; answering with {model} instead: "
            f"{wanted} is not in LILY_SKILL_MODELS (your own setting; docs/skills.md, "
            "Overrides)")


def pre_approved(tool: str, skill: str) -> str:
    """A call not asked about: the active skill's `allowed-tools` pre-approved it."""
    return f"Tool {tool}: allowed by skill {skill} (not asked: LILY_SKILL_PREAPPROVAL)"
