"""The request's shortlist and the declaration among near-equal matches (prompting/selection.py)."""

from __future__ import annotations

from lily_kernel.prompting.selection import MARGIN, SHORTLIST, parse_selection, shortlist
from lily_kernel.skills import RELEVANT_SCORE, Ranked


def ranked(*pairs: tuple[str, float]) -> list[Ranked]:
    return [Ranked(name, score) for name, score in pairs]


def test_no_relevant_match_is_no_candidate() -> None:
    short = shortlist(ranked(("a", RELEVANT_SCORE * 0.9), ("b", 0.2)), {"a", "b"})
    assert [r.name for r in short.ranked] == ["a", "b"] and short.candidates == ()
    assert short.reason().startswith("the best match, a, scores 0.90, under 1.00")
    assert shortlist([], {"a"}).reason() == "no skill matches the request's words"


def test_a_clear_best_match_is_the_one_candidate() -> None:
    short = shortlist(ranked(("a", 3.0), ("b", 3.0 * (1 - MARGIN) - 0.01)), {"a", "b"})
    assert short.candidates == ("a",)
    assert short.reason() == "a scores 3.00; the next, b, 2.69"


def test_near_equal_matches_are_all_candidates_and_hidden_skills_none() -> None:
    short = shortlist(ranked(("hidden", 9.0), ("a", 3.0), ("b", 2.8), ("c", 1.0)),
                      {"a", "b", "c"})
    assert short.candidates == ("a", "b")  # `hidden` is not model-visible
    assert short.record() == [{"name": "a", "score": 3.0}, {"name": "b", "score": 2.8},
                              {"name": "c", "score": 1.0}]
    assert short.reason() == "2 matches within 10% of the best (3.00): the model was asked"


def test_the_shortlist_keeps_the_best_few() -> None:
    many = ranked(*((f"s{i:02}", 10.0 - i) for i in range(20)))
    assert len(shortlist(many, {r.name for r in many}).ranked) == SHORTLIST


def test_a_declaration_names_a_candidate_or_none() -> None:
    assert parse_selection('{"skill": "a"}', ("a", "b")).outcome == "selected"
    assert parse_selection('{"skill": null}', ("a", "b")).outcome == "none"
    assert parse_selection('{"skill": "z"}', ("a", "b")).outcome == "unknown"
    assert parse_selection("a please", ("a", "b")).outcome == "malformed"


def test_a_long_body_is_cut_at_a_line_or_a_word_and_says_so() -> None:
    from lily_kernel.prompting.skill_text import bounded_body

    lines = "".join(f"Line {i} of the manual.\n" for i in range(100))
    opening, left = bounded_body(lines, 200)
    kept = opening.split("\n\n[")[0]
    assert kept.endswith("of the manual.") and len(kept) <= 200
    assert left == len(lines.strip()) - len(kept)
    assert opening.endswith(f"[The rest of this SKILL.md, {left:,} characters, is left out "
                            "to fit the model's context window.]")
    paragraph = "# Title\n" + "word " * 400
    cut, _ = bounded_body(paragraph, 200)
    assert len(cut.split("\n\n[")[0]) > 150  # not just the title: at a word's end
    assert bounded_body("short", 200) == ("short", 0)


def test_a_candidates_summary_is_cut_as_the_catalogs_entries_are() -> None:
    from lily_kernel.prompting.selection import candidates_message
    from lily_kernel.prompting.system import ENTRY_TEXT_MAX
    from lily_kernel.skills import Skill

    big = Skill(name="big", source="bundled", path="/s/big/SKILL.md", digest="0" * 64,
                summary="word " * 40_000, body="")
    content = candidates_message([big, big])["content"]
    assert len(content) < 2 * (ENTRY_TEXT_MAX + len("- big: \n")) + 100
    assert "- big: word word" in content and "…" in content
