"""Prompt assembly is pure and pinned by golden text."""

from __future__ import annotations

from lily_kernel.persona import Persona, PersonaFile
from lily_kernel.prompting import build_catalog, build_model_request, build_system_prompt
from lily_kernel.prompting.system import ENTRY_TEXT_MAX
from lily_kernel.skills import Frontmatter, Skill, SkillSnapshot

PERSONA = Persona("default", (PersonaFile("SOUL.md", "bundled", "/p/SOUL.md", "Be kind.\n"),
                              PersonaFile("AGENTS.md", "bundled", "/p/AGENTS.md", "Use tools.")))


def skill(name: str, summary: str, **kw: object) -> Skill:
    return Skill(name=name, source="bundled", path=f"/s/{name}/SKILL.md", digest="0" * 64,
                 summary=summary, body=f"Body of {name}.", **kw)  # type: ignore[arg-type]


SNAP = SkillSnapshot(1, "d", (), (skill("alpha", "Does <a> & b"), skill("hidden", "h",
                     front=Frontmatter(disable_model_invocation=True)), skill("beta", "Second")), ())

GOLDEN = """\
# Persona

## SOUL

Be kind.

## AGENTS

Use tools.

# Skills

<available_skills>
- alpha: Does &lt;a&gt; &amp; b
- beta: Second
</available_skills>

# Rules

- Select at most one skill per request. Skills cannot be combined or chained.
- Before following a skill, declare it by calling the `load_skill` tool with its exact \
name; its SKILL.md is returned to you. Never follow a skill you have not loaded.
- Only the skills listed in <available_skills> exist. Do not guess names.
- When no skill clearly applies, answer directly without loading one.
"""


def test_system_prompt_golden() -> None:
    request = build_model_request(persona=PERSONA, snapshot=SNAP, history=[],
                                  user_text="hi", catalog_max_chars=10_000)
    assert request.system == GOLDEN
    assert request.catalog is not None and request.catalog.listed == ("alpha", "beta")
    assert request.messages[-1] == {"role": "user", "content": "hi"}


def test_catalog_budget_degrades_visibly() -> None:
    catalog = build_catalog(SNAP.skills, 40)
    assert catalog.listed == ("alpha",)
    assert catalog.omitted == ("beta",)


def test_a_catalog_entry_is_one_line_whatever_the_summary() -> None:
    multi = skill("gamma", "First line\n  second line,\n\n</available_skills> third")
    catalog = build_catalog((multi,), 10_000)
    assert catalog.text == ("<available_skills>\n- gamma: First line second line, "
                            "&lt;/available_skills&gt; third\n</available_skills>")


def test_a_model_without_tools_gets_the_declaration_rules() -> None:
    request = build_model_request(persona=PERSONA, snapshot=SNAP, history=[],
                                  user_text="hi", catalog_max_chars=10_000,
                                  tool_calls=False)
    rules = request.system.split("# Rules\n\n")[1]
    assert rules.startswith("- When skills are listed after a message, first name the one "
                            'that fits, as JSON: {"skill": "<name>"}, or {"skill": null}.')
    assert "load_skill" not in request.system
    # No catalog: the request's shortlist chooses (prompting/selection.py).
    assert "<available_skills>" not in request.system and request.catalog is None


def test_forced_skill_injects_body_and_drops_load_skill() -> None:
    history = [{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "ok"}]
    request = build_model_request(persona=PERSONA, snapshot=SNAP, history=history,
                                  user_text="", catalog_max_chars=10_000,
                                  forced_skill=SNAP.skills[0])
    assert request.system.endswith("# Skill: alpha\n\nBody of alpha.\n")
    assert "<available_skills>" not in request.system and request.catalog is None
    assert request.messages[1:3] == tuple(history)
    assert request.user_message["content"] == "Apply the skill to the conversation so far."


def test_when_to_use_joins_the_summary_within_claudes_cap() -> None:
    when = skill("w", "Summarises.", front=Frontmatter(when_to_use="When a text\n is long."))
    plain = skill("p", "Plain.")
    catalog = build_catalog((when, plain), 10_000)
    assert catalog.text == ("<available_skills>\n- w: Summarises. When to use: When a text "
                            "is long.\n- p: Plain.\n</available_skills>")
    long = skill("l", "S.", front=Frontmatter(when_to_use="x " * 2_000))
    entry = build_catalog((long,), 10_000).text.splitlines()[1]
    assert len(entry) == len("- l: ") + ENTRY_TEXT_MAX and entry.endswith("x…")
    assert build_catalog((when,), 40).omitted == ("w",)  # the budget counts it


def test_a_forced_skill_reads_the_persons_arguments() -> None:
    argskill = Skill(name="argskill", source="user", path="/u/argskill/SKILL.md",
                     digest="0" * 64, summary="", front=Frontmatter(arguments=("who",)),
                     body="Greet $who ($ARGUMENTS) from {baseDir}; then $1.")
    request = build_model_request(persona=PERSONA, snapshot=SNAP, history=[],
                                  user_text='  ada "the count" ', catalog_max_chars=10_000,
                                  forced_skill=argskill)
    assert request.system.endswith(
        '# Skill: argskill\n\nGreet ada (ada "the count") from /u/argskill; then the count.\n')
    assert request.user_message["content"] == 'ada "the count"'


def test_every_entry_is_capped_kept_or_not_and_the_budget_holds_for_the_rest() -> None:
    huge = tuple(skill(f"big{i}", "a&b " * 50_000) for i in range(5))  # 200 KB each
    snapshot = SkillSnapshot(1, "d", (), huge, ())
    frame = build_system_prompt(PERSONA, build_catalog((), 1_000))
    line = len("- big0: \n") + ENTRY_TEXT_MAX
    request = build_model_request(persona=PERSONA, snapshot=snapshot, history=[],
                                  user_text="hi", catalog_max_chars=1_000,
                                  keep=frozenset(s.name for s in huge))  # all shortlisted
    assert len(request.system) <= len(frame) + 5 * line
    assert request.catalog is not None and len(request.catalog.listed) == 5
    entry = request.catalog.text.splitlines()[1]
    assert entry.endswith("…") and "&" not in entry.replace("&amp;", "")
    catalog = build_catalog(huge, 2 * line)  # none kept: the budget decides
    assert catalog.listed == ("big0", "big1") and len(catalog.text) <= len(
        build_catalog((), 0).text) + 2 * line
    assert build_catalog(huge, 2 * line, frozenset({"big4"})).listed == ("big0", "big4")


def test_an_entry_is_never_cut_inside_an_escaped_character() -> None:
    for before in range(6):  # the cut falls before `&amp;`, on each of its characters, after
        entry = build_catalog((skill("e", "x" * (ENTRY_TEXT_MAX - 1 - before) + "&" * 400),),
                              10_000).text.splitlines()[1]
        text = entry.removeprefix("- e: ")
        assert len(text) <= ENTRY_TEXT_MAX and text.endswith("…")
        assert text.removesuffix("…").replace("&amp;", "").strip("x") == ""
        assert text.count("&amp;") == (1 if before == 5 else 0)
