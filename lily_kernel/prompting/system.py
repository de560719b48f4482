"""Assemble the model's system context: persona, skill catalog, rules. Pure: no clock, no disk."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from lily_kernel.persona import Persona
from lily_kernel.prompting.skill_text import SKILL_FILES_NOTE, forced_skill_section, skill_body
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
- When skills are listed after a message, first name the one that fits, as JSON: \
{"skill": "<name>"}, or {"skill": null}. Its SKILL.md is then given to you.
- When a skill's SKILL.md follows a message, follow it to answer. Follow no skill you \
were not given; without one, answer directly."""

FORCED_RULES = """\
- The person invoked the skill `{name}` explicitly for this request. Follow its \
SKILL.md below; do not switch to another skill."""

@dataclass(frozen=True)
class Catalog:
    """The `<available_skills>` block and the skills the budget left out of it."""

    text: str
    listed: tuple[str, ...]
    omitted: tuple[str, ...]


# Claude Code's cap on what its listing shows of a skill's description and when_to_use.
ENTRY_TEXT_MAX = 1_536


def _entry_text(skill: Skill) -> str:
    """The summary, then Claude Code's `when_to_use` (cut so that both stay within
    ENTRY_TEXT_MAX characters; a summary alone is never cut)."""
    summary = " ".join(skill.summary.split())
    when = " ".join(skill.when_to_use.split())
    if not when:
        return summary
    prefix = f"{summary} When to use: " if summary else "When to use: "
    room = ENTRY_TEXT_MAX - len(prefix)
    if room <= 1:
        return summary
    return prefix + (when if len(when) <= room else when[:room - 1].rstrip() + "…")


def _catalog_entry(skill: Skill) -> str:
    """One line, `- name: summary When to use: ...`: half the tokens of an XML element
    per skill (the model reads the catalog on every request), and as clear to it."""
    return f"- {escape(skill.name, quote=False)}: {escape(_entry_text(skill), quote=False)}"


def build_catalog(skills: tuple[Skill, ...], max_chars: int,
                  keep: frozenset[str] = frozenset()) -> Catalog:
    """Model-visible skills in snapshot order, until `max_chars` is reached; the skills
    in `keep` (the request's shortlist) are listed whatever the budget, first counted."""
    visible = [s for s in skills if s.model_visible]
    used = sum(len(_catalog_entry(s)) + 1 for s in visible if s.name in keep)
    entries: list[str] = []
    listed: list[str] = []
    omitted: list[str] = []
    full = False
    for skill in visible:
        entry = _catalog_entry(skill)
        if skill.name not in keep:
            if full or used + len(entry) + 1 > max_chars:
                full = True  # once over budget, everything after is left out
                omitted.append(skill.name)
                continue
            used += len(entry) + 1
        entries.append(entry)
        listed.append(skill.name)
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
    arguments: str = "",
) -> str:
    """Persona sections, then either the catalog and selection rules or a forced skill
    (its body with `arguments`, the person's request, in its placeholders).

    `tool_calls`: the model declares its skill with `load_skill`; otherwise there is no
    catalog: the request's shortlist selects, and the model declares only among
    near-equal matches (prompting/selection.py)."""
    parts = []
    sections = _persona_sections(persona)
    if sections:
        parts.append("# Persona\n\n" + "\n\n".join(sections))
    if forced_skill is not None:
        # The note names the skill-file tools: only for a model that is offered them.
        note = "\n- " + SKILL_FILES_NOTE if tool_calls else ""
        parts.append("# Rules\n\n" + FORCED_RULES.format(name=forced_skill.name) + note)
        parts.append(forced_skill_section(forced_skill.name,
                                          skill_body(forced_skill, arguments)))
    elif not tool_calls:
        # No catalog: the request's shortlist chooses (prompting/selection.py).
        parts.append("# Rules\n\n" + DECLARATION_RULES)
    elif catalog is not None:
        parts.append("# Skills\n\n" + catalog.text)
        parts.append("# Rules\n\n" + SELECTION_RULES)
    return "\n\n".join(parts) + "\n"
