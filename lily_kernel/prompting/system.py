"""Assemble the model's system context: persona, skill catalog, rules. Pure: no clock, no disk."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from lily_kernel.persona import Persona
from lily_kernel.prompting.skill_text import SKILL_FILES_NOTE, forced_skill_section
from lily_kernel.skills import Skill

__all__ = ["ENTRY_TEXT_MAX", "Catalog", "build_catalog", "build_system_prompt", "cut_entry"]

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
# Lily applies it to every entry, a summary alone too (a 200 KB description made a 1 MB
# system prompt: the request's shortlist is listed whatever the budget), and counts
# it as the model reads it, escaped.
ENTRY_TEXT_MAX = 1_536


def cut_entry(text: str, limit: int = ENTRY_TEXT_MAX) -> str:
    """`text` within `limit` characters: cut with an ellipsis, and never inside an
    entity of escaped text (`&amp;`), which the model would read as garbage."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    amp = cut.rfind("&", len(cut) - 4)  # the longest entity, `&amp;`, has 4 before `;`
    if amp != -1 and ";" not in cut[amp:]:
        cut = cut[:amp]
    return cut.rstrip() + "…"


def _entry_text(skill: Skill) -> str:
    """The summary, then Claude Code's `when_to_use`, escaped, both within
    ENTRY_TEXT_MAX characters (`when_to_use` is cut first; a summary that fills them
    alone is cut itself and has no `when_to_use`)."""
    summary = cut_entry(escape(" ".join(skill.summary.split()), quote=False))
    when = escape(" ".join(skill.when_to_use.split()), quote=False)
    if not when:
        return summary
    prefix = f"{summary} When to use: " if summary else "When to use: "
    room = ENTRY_TEXT_MAX - len(prefix)
    if room <= 1:
        return summary
    return prefix + cut_entry(when, room)


def _catalog_entry(skill: Skill) -> str:
    """One line, `- name: summary When to use: ...`: half the tokens of an XML element
    per skill (the model reads the catalog on every request), and as clear to it."""
    return f"- {escape(skill.name, quote=False)}: {_entry_text(skill)}"


def build_catalog(skills: tuple[Skill, ...], max_chars: int,
                  keep: frozenset[str] = frozenset()) -> Catalog:
    """Model-visible skills in snapshot order, until `max_chars` is reached; the skills
    in `keep` (the request's shortlist) are listed whatever the budget, first counted
    (each entry is at most ENTRY_TEXT_MAX characters and its name, so they cost at most
    that many each)."""
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
    forced_body: str = "",
) -> str:
    """Persona sections, then either the catalog and selection rules or a forced skill
    (`forced_body`: its SKILL.md as the model reads it, fitted to its window).

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
        parts.append(forced_skill_section(forced_skill.name, forced_body))
    elif not tool_calls:
        # No catalog: the request's shortlist chooses (prompting/selection.py).
        parts.append("# Rules\n\n" + DECLARATION_RULES)
    elif catalog is not None:
        parts.append("# Skills\n\n" + catalog.text)
        parts.append("# Rules\n\n" + SELECTION_RULES)
    return "\n\n".join(parts) + "\n"
