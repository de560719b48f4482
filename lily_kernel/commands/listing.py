"""What `/skills` shows: the snapshot's listing, or its skills ranked against words.

Also `lily skills`'s text output. Pure: a snapshot in, a `CommandResult` out.
"""

from __future__ import annotations

import threading

from lily_kernel.commands.results import Block, CommandResult, Details, Table, Text
from lily_kernel.skills import SkillRanker, SkillSnapshot

__all__ = ["RANKED_SHOWN", "ranked_result", "skills_result"]


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
    excluded = snap.excluded
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
    title = (
        f"Skills: {len(snap.skills)} available (snapshot {snap.version}, "
        f"digest {snap.digest[:12]})"
    )
    return CommandResult("skills", title, tuple(blocks))


RANKED_SHOWN = 10  # `/skills <words>` shows the most relevant skills, at most this many


def ranked_result(snap: SkillSnapshot, ranker: SkillRanker, words: str,
                  stop: threading.Event | None = None) -> CommandResult:
    """`/skills <words>`: the snapshot's skills ranked against the words by its ranker
    (the one that gives the model its shortlist; no model involved), with their scores.
    Raises EncodingStopped when `stop` is set while the snapshot's skills are encoded."""
    looked_up = ranker.words(words)
    ranked = ranker.rank(words, stop=stop)
    title = (f"Skills for \"{' '.join(words.split())}\": {len(ranked)} of "
             f"{len(snap.skills)} match (snapshot {snap.version})")
    if not looked_up:
        return CommandResult("skills", title, (Text(
            "These are all everyday words; none of them is looked up. Name what the "
            "skill is about."),))
    blocks: list[Block] = [Text(f"Looked up: {', '.join(looked_up)}. "
                                f"Ranked by {ranker.ranked_by}.")]
    if not ranked:
        blocks.append(Text("No skill matches these words."))
    else:
        rows = []
        for found in ranked[:RANKED_SHOWN]:
            skill = snap.get(found.name)
            assert skill is not None  # the ranker indexes this very snapshot
            rows.append((skill.name, f"{found.score:.2f}", skill.summary, skill.source))
        blocks.append(Table(("name", "score", "summary", "source"), tuple(rows)))
        if len(ranked) > RANKED_SHOWN:
            blocks.append(Text(f"... and {len(ranked) - RANKED_SHOWN} more with a lower "
                               "score."))
    return CommandResult("skills", title, tuple(blocks))
