"""What a skill's frontmatter may ask of a turn, and what the person's own settings grant.

Frontmatter only asks; the person's settings decide (Claude Code's rule, made stricter
with Lily's trust by digest). Two overrides are honoured, each only where the person
enabled it in their own environment (never a workspace file: a downloaded folder
cannot widen what its skills may do):

- `model:`: the turns that use the skill run on that model when `LILY_SKILL_MODELS`
  (a comma list of model names, `*` for any) names it; otherwise the person's model
  answers, and the cell says why.
- `allowed-tools` as pre-approval: a tool the policy asks about only by default
  (python, shell) runs unasked while the skill is active, when `LILY_SKILL_PREAPPROVAL`
  is on, the skill is the person's own or trusted at its present digest, and its folder
  is trusted. Never over a deny rule or the person's own `tools.ask`, never for an
  untrusted folder's question or a call asked of itself (runtime/tool_gate.py).

Every other Claude Code key Lily does not act on is named by `ignored_keys`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from lily_kernel.skills.fields import tool_names_of_entries
from lily_kernel.skills.models import Skill
from lily_kernel.skills.roots import ARRIVING_SOURCES

__all__ = ["ACTED_ON_EXTRA", "PREAPPROVAL_VARIABLE", "SKILL_MODELS_VARIABLE", "Grant",
           "ModelRefusal", "OverrideSettings", "ignored_keys", "model_decision",
           "override_settings", "pre_approval", "requested_model"]

SKILL_MODELS_VARIABLE = "LILY_SKILL_MODELS"
PREAPPROVAL_VARIABLE = "LILY_SKILL_PREAPPROVAL"
_ON = frozenset({"1", "true", "yes", "on"})
# The frontmatter keys outside `Frontmatter` that Lily acts on (kept in `Skill.extra`).
ACTED_ON_EXTRA = frozenset({"model"})


@dataclass(frozen=True)
class OverrideSettings:
    """The person's own say on skill overrides (their environment only)."""

    models: frozenset[str] = frozenset()  # the models a skill may ask for; `*`: any
    preapproval: bool = False  # skills may pre-approve the tools they list


def override_settings(environ: Mapping[str, str]) -> OverrideSettings:
    """The settings from the person's environment (`LILY_SKILL_MODELS`,
    `LILY_SKILL_PREAPPROVAL`); unset: no model allowed, no pre-approval."""
    models = frozenset(name.strip() for name in
                       environ.get(SKILL_MODELS_VARIABLE, "").split(",") if name.strip())
    on = environ.get(PREAPPROVAL_VARIABLE, "").strip().lower() in _ON
    return OverrideSettings(models=models, preapproval=on)


def requested_model(skill: Skill) -> str | None:
    """The model a skill's `model:` asks for (None: none, or not a name)."""
    value = skill.extra.get("model")
    return value.strip() if isinstance(value, str) and value.strip() else None


class ModelRefusal(StrEnum):
    """Why a skill's `model:` is not used (display/overrides.py words it)."""

    NOT_ALLOWED = "not_allowed"  # LILY_SKILL_MODELS does not name it


def model_decision(skill: Skill, settings: OverrideSettings
                   ) -> str | ModelRefusal | None:
    """The model the skill's turns run on (its `model:`, allowed by the person), why
    not, or None when it asks for none."""
    wanted = requested_model(skill)
    if wanted is None:
        return None
    if wanted in settings.models or "*" in settings.models:
        return wanted
    return ModelRefusal.NOT_ALLOWED


class Grant(StrEnum):
    """What became of a skill's pre-approval of one call."""

    GRANTED = "granted"
    OFF = "off"  # the person did not enable pre-approval
    NOT_LISTED = "not_listed"  # the skill's allowed-tools do not name the tool
    NOT_ASKED_BY_DEFAULT = "not_default"  # a deny, the person's tools.ask, an untrusted
    # folder's question or a call asked of itself: never pre-approved
    UNTRUSTED_FOLDER = "untrusted_folder"
    NOT_TRUSTED = "not_trusted"  # a workspace skill the person never trusted
    CHANGED = "changed"  # changed on disk since the person trusted it


def pre_approval(skill: Skill, tool: str, kept_by: frozenset[str] | None, *,
                 asked_by_default: bool, settings: OverrideSettings,
                 folder_trusted: bool, changed: bool) -> Grant:
    """Whether `skill` pre-approves a call of `tool` (`kept_by`: the `allowed-tools`
    names that stand for it) that the policy would ask about (`asked_by_default`: only
    because the tool is asked by default). `changed`: the skill's folder differs from
    the digest the person trusted."""
    if not settings.preapproval:
        return Grant.OFF
    names = tool_names_of_entries(skill.allowed_tools or ())
    if not (tool.lower() in names or (kept_by is not None and kept_by & names)):
        return Grant.NOT_LISTED
    if not asked_by_default:
        return Grant.NOT_ASKED_BY_DEFAULT
    if not folder_trusted:
        return Grant.UNTRUSTED_FOLDER
    # A skill that arrived with a folder must be trusted at its digest (LILY_TRUST,
    # which digests nothing, is not enough); the person's own roots are theirs.
    if skill.source in ARRIVING_SOURCES or skill.trusted_digest is not None:
        if skill.trusted_digest is None:
            return Grant.NOT_TRUSTED
        if changed:
            return Grant.CHANGED
    return Grant.GRANTED


def ignored_keys(skill: Skill) -> tuple[str, ...]:
    """The frontmatter keys of `skill` Lily does not act on (kept, shown by `/help`)."""
    return tuple(sorted(key for key in skill.extra if key not in ACTED_ON_EXTRA))
