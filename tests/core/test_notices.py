"""display/notices.py: the notices of the session's own state, each worded once (the words
the person read before they moved here, kept)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lily_kernel.display import Notice, bundle
from lily_kernel.display.notices import (
    forced_skill_cut,
    mcp_server_failed,
    selection_refused,
    skill_chosen,
    tool_ran,
    trust_decided,
    trust_help,
)

WORKSPACE = Path("/nb")
HELP = ("run `/trust` in a cell, or `lily trust /nb` in a terminal, or set "
        "`LILY_TRUST=workspace` for a runner without input")


def test_how_to_trust_names_the_workspace_and_the_variable() -> None:
    assert trust_help(WORKSPACE, "LILY_TRUST") == HELP


@pytest.mark.parametrize(("outcome", "trusted_before", "said"), [
    ("approved", False, "Trusted /nb: its skills, persona and lily.yaml apply."),
    ("approved", True, "Trusted /nb: its skills, persona and lily.yaml apply."),
    ("declined", True, f"Held for this session: what the question listed. To trust it "
                       f"later, {HELP}."),
    ("unanswerable", True, "What changed in this workspace since you trusted it is held "
                           f"(`/skills` lists it). To trust it, {HELP}."),
    ("unanswerable", False, "This workspace is not trusted, so what came with it is held "
                            f"(`/skills` lists the skills). To trust it, {HELP}."),
])
def test_what_came_of_the_trust_question(outcome: str, trusted_before: bool, said: str) -> None:
    assert trust_decided(outcome, WORKSPACE, trusted_before, "LILY_TRUST") == said


def test_how_a_skill_was_chosen_and_what_of_it_was_cut() -> None:
    assert skill_chosen("pdf", "model") == "Skill: pdf (selected by the model)"
    assert skill_chosen("pdf", "model", left=1234) == (
        "Skill: pdf (selected by the model; its SKILL.md less its last 1,234 characters, "
        "to fit)")
    assert skill_chosen("pdf", "near-equal", 0.5) == (
        "Skill: pdf (chosen by the model among near-equal matches)")
    assert skill_chosen("pdf", "ranker", 0.8149) == (
        "Skill: pdf (best match for this request, score 0.81)")
    assert forced_skill_cut("pdf", 20000) == (
        "Skill: pdf: its SKILL.md less its last 20,000 characters, to fit the model's "
        "context window.")
    assert selection_refused("no such skill 'x'") == (
        "Skill selection refused: no such skill 'x'; answering without a skill.")


def test_a_tool_that_does_not_announce_itself_ran_or_says_why_not() -> None:
    assert tool_ran("list", True, "") == "Tool list: ran"
    assert tool_ran("list", False, "refused: not allowed.") == "Tool list: refused: not allowed"


def test_a_notice_shows_its_code_spans_as_code_and_escapes_the_rest() -> None:
    html = bundle(Notice(mcp_server_failed("<files>", "exit 1")))["text/html"]
    assert "MCP server &#x27;&lt;files&gt;&#x27; could not start: exit 1." in html
    assert "(<code>/mcp</code> shows the servers)" in html
