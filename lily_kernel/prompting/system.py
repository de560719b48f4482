"""Assemble the model's system context: persona, skill catalog, rules. Pure: no clock, no disk."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from lily_kernel.persona import Persona
from lily_kernel.prompting.skill_text import SKILL_FILES_NOTE, forced_skill_section
from lily_kernel.skills import Skill

__all__ = ["Catalog", "build_catalog", "build_system_prompt"]

SELECTION_RULES = """\
- Select at most one skill per request. Skills cannot be combined or chained.
- Before following a skill, declare it by calling the `load_skill` tool with its exact \
name; its SKILL.md is returned to you. Never follow a skill you have not loaded.
- Only the skills listed in <available_skills> exist. Do not guess names.
- When no skill clearly applies, answer directly without loading one."""

# For a model that cannot call tools; short, as such models are small and local.
DECLARATION_RULES = """\
- First name the one listed skill that fits the message, as JSON: {"skill": "<name>"}, \
or {"skill": null}. Its SKILL.md is then given to you. Follow no skill you were not given.
- When no skill clearly applies, answer directly."""

FORCED_RULES = """\
- The person invoked the skill `{name}` explicitly for this request. Follow its \
SKILL.md below; do not switch to another skill."""

@dataclass(frozen=True)
class Catalog:
    """The `<available_skills>` block and the skills the budget left out of it."""

    text: str
    listed: tuple[str, ...]
    omitted: tuple[str, ...]


def _catalog_entry(skill: Skill) -> str:
    """One line, `- name: summary`: half the tokens of an XML element per skill (the
    model reads the catalog on every request), and as clear to it."""
    summary = " ".join(skill.summary.split())
    return f"- {escape(skill.name, quote=False)}: {escape(summary, quote=False)}"


def build_catalog(skills: tuple[Skill, ...], max_chars: int) -> Catalog:
    """Model-visible skills in snapshot order, until `max_chars` is reached."""
    entries: list[str] = []
    listed: list[str] = []
    omitted: list[str] = []
    used = 0
    for skill in skills:
        if not skill.model_visible:
            continue
        entry = _catalog_entry(skill)
        if omitted or used + len(entry) + 1 > max_chars:
            omitted.append(skill.name)  # once over budget, everything after is left out
            continue
        entries.append(entry)
        listed.append(skill.name)
        used += len(entry) + 1
    text = "<available_skills>\n" + "".join(e + "\n" for e in entries) + "</available_skills>"
    return Catalog(text=text, listed=tuple(listed), omitted=tuple(omitted))


def _persona_sections(persona: Persona) -> list[str]:
    return [
        f"## {file.name.removesuffix('.md')}\n\n{file.content.strip()}"
        for file in persona.files
        if file.content.strip()
    ]


def build_system_prompt(
    persona: Persona,
    catalog: Catalog | None,
    forced_skill: Skill | None = None,
    tool_calls: bool = True,
) -> str:
    """Persona sections, then either the catalog and selection rules or a forced skill.

    `tool_calls`: the model declares its skill with `load_skill`; otherwise it is asked
    for a structured declaration (prompting/selection.py)."""
    parts = []
    sections = _persona_sections(persona)
    if sections:
        parts.append("# Persona\n\n" + "\n\n".join(sections))
    if forced_skill is not None:
        # The note names the skill-file tools: only for a model that is offered them.
        note = "\n- " + SKILL_FILES_NOTE if tool_calls else ""
        parts.append("# Rules\n\n" + FORCED_RULES.format(name=forced_skill.name) + note)
        parts.append(forced_skill_section(forced_skill.name, forced_skill.body))
    elif catalog is not None:
        parts.append("# Skills\n\n" + catalog.text)
        parts.append("# Rules\n\n" + (SELECTION_RULES if tool_calls else DECLARATION_RULES))
    return "\n\n".join(parts) + "\n"
