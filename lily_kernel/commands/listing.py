"""What `/skills` shows: the snapshot's listing, or its skills ranked against words.

Also `lily skills`'s text output. Pure: a snapshot in, a `CommandResult` out.

Held skills (waiting for the person's trust, `SkillSnapshot.held`) are said apart from
the excluded ones: they are not broken, only not trusted yet. A ranking counts as a
match only what scores RELEVANT_SCORE or more (the ranker's own threshold, the one the
model's shortlist uses): with the sentence encoder every skill scores a little, and
"10 of 11 match" for "17 times 23" said nothing.
"""

from __future__ import annotations

import threading

from lily_kernel.commands.results import CommandResult
from lily_kernel.display import Block, Details, Table, Text
from lily_kernel.skills import (
    RELEVANT_SCORE,
    DiagnosticKind,
    Ranked,
    Skill,
    SkillRanker,
    SkillSnapshot,
)

__all__ = ["HELD_LINE", "NEAREST_SHOWN", "RANKED_SHOWN", "held_why", "ranked_result",
           "skills_result"]

HELD_LINE = "held until you trust this folder"


def held_why(skill: Skill | None) -> str:
    """Why a held skill waits, in the person's words: it changed since they trusted it
    (it carries the digest it was trusted at), or it is new."""
    if skill is not None and skill.trusted_digest is not None:
        return "changed since you trusted it"
    return "new: not trusted yet"


def _held(snap: SkillSnapshot) -> list[tuple[str, str, str, str]]:
    """Each held skill: name, summary, source, why (from its `untrusted` diagnostic and,
    when the snapshot kept it, its text)."""
    kept = {s.name: s for s in snap.held}
    rows: list[tuple[str, str, str, str]] = []
    for diag in snap.diagnostics:
        if diag.kind is DiagnosticKind.UNTRUSTED:
            skill = kept.get(diag.skill)
            rows.append((diag.skill, skill.summary if skill else "", diag.source,
                         held_why(skill)))
    return rows


def skills_result(snap: SkillSnapshot) -> CommandResult:
    """The `/skills` listing of a snapshot (also `lily skills`'s text output)."""
    rows = tuple(
        (s.name, s.summary, s.source, s.invocation_mode, f"/{s.command}" if s.command else "")
        for s in snap.skills
    )
    blocks: list[Block] = [
        Table(("name", "summary", "source", "mode", "alias"), rows)
        if rows
        else Text("No skills are available in this session.")
    ]
    held = _held(snap)
    if held:
        blocks.append(Text(f"{len(held)} {HELD_LINE} (a chat cell asks once a session; "
                           "or run `lily trust` in a terminal)."))
        blocks.append(Details(
            f"Held until you trust this folder ({len(held)})",
            (Table(("name", "summary", "source", "why"), tuple(held)),),
        ))
    excluded = [d for d in snap.excluded if d.kind is not DiagnosticKind.UNTRUSTED]
    if excluded:
        blocks.append(Details(
            f"Excluded ({len(excluded)})",
            (Table(("name", "kind", "source", "reason"),
                   tuple((d.skill, d.kind.value, d.source, d.reason) for d in excluded)),),
        ))
    warnings = snap.warnings
    if warnings:
        blocks.append(Details(
            f"Warnings ({len(warnings)})",
            (Table(("name", "source", "warning"),
                   tuple((d.skill, d.source, d.reason) for d in warnings)),),
        ))
    counts = f"{len(snap.skills)} available" + (f", {len(held)} {HELD_LINE}" if held else "")
    title = f"Skills: {counts} (snapshot {snap.version}, digest {snap.digest[:12]})"
    return CommandResult("skills", title, tuple(blocks))


RANKED_SHOWN = 10  # `/skills <words>` shows the most relevant skills, at most this many
NEAREST_SHOWN = 3  # when none matches, the nearest skills named (under the threshold)


def _scores(ranked: list[Ranked]) -> str:
    return ", ".join(f"{r.name} ({r.score:.2f})" for r in ranked)


def ranked_result(snap: SkillSnapshot, ranker: SkillRanker, words: str,
                  stop: threading.Event | None = None,
                  held: SkillRanker | None = None) -> CommandResult:
    """`/skills <words>`: the snapshot's skills ranked against the words (the ranker
    that gives the model its shortlist; no model involved), with their scores: those
    scoring RELEVANT_SCORE or more match; when none does, the nearest are named as such.
    The held skills are ranked apart, and those that would match are named. Raises
    EncodingStopped when `stop` is set while the snapshot's skills are encoded."""
    looked_up = ranker.words(words)
    ranked = ranker.rank(words, stop=stop) if looked_up else []
    matching = [r for r in ranked if r.score >= RELEVANT_SCORE]
    below = ranked[len(matching):]  # best first: the rest score under the threshold
    title = (f"Skills for \"{' '.join(words.split())}\": {len(matching)} of "
             f"{len(snap.skills)} match (snapshot {snap.version})")
    if not looked_up:
        return CommandResult("skills", title, (Text(
            "These are all everyday words; none of them is looked up. Name what the "
            "skill is about."),))
    blocks: list[Block] = [Text(f"Looked up: {', '.join(looked_up)}. "
                                f"Ranked by {ranker.ranked_by}.")]
    if not matching:
        blocks.append(Text(
            f"No skill matches these words (none scores {RELEVANT_SCORE:.2f}, the relevance "
            f"threshold); the nearest: {_scores(below[:NEAREST_SHOWN])}."
            if below else "No skill matches these words."))
    else:
        rows = []
        for found in matching[:RANKED_SHOWN]:
            skill = snap.get(found.name)
            assert skill is not None  # the ranker indexes this very snapshot
            rows.append((skill.name, f"{found.score:.2f}", skill.summary, skill.source))
        blocks.append(Table(("name", "score", "summary", "source"), tuple(rows)))
        if len(matching) > RANKED_SHOWN:
            blocks.append(Text(f"... and {len(matching) - RANKED_SHOWN} more with a lower "
                               "score."))
        if below:
            blocks.append(Text(f"{len(below)} more score under {RELEVANT_SCORE:.2f}, the "
                               "relevance threshold: no match."))
    if snap.held and held is not None:
        would = [r.name for r in held.rank(words, stop=stop)
                 if r.score >= RELEVANT_SCORE]
        if would:
            blocks.append(Text(f"{HELD_LINE[0].upper()}{HELD_LINE[1:]}: "
                               f"{', '.join(would)} would match."))
    return CommandResult("skills", title, tuple(blocks))
