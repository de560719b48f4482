"""The notice before a ranking that will encode many skills: its one wording and threshold."""

from __future__ import annotations

import asyncio

from lily_kernel.display import Notice
from lily_kernel.display.messages import encoding_notice
from lily_kernel.runtime.sink import CellSink
from lily_kernel.skills import SkillRanker

__all__ = ["ENCODING_NOTICE_AT", "ENCODING_SECONDS", "announce_encoding"]

# A first ranking that encodes this many skills or more is said beforehand, with its
# time at ~0.1 s a skill (one core, docs/benchmarks.md: 1,061 skills in 110 s).
ENCODING_NOTICE_AT, ENCODING_SECONDS = 50, 0.1


async def announce_encoding(ranker: SkillRanker, sink: CellSink,
                            held: SkillRanker | None = None) -> None:
    """Before a ranking of the snapshot (a declaration's shortlist, `/skills <words>`, a
    catalog over its budget): say so when it will encode ENCODING_NOTICE_AT skills or
    more, once a machine (counted off the event loop: it reads the cache). `held`: the
    held skills' ranker, when the ranking reads them too (`/skills <words>` says which
    would match)."""
    def unencoded() -> int:
        return ranker.unencoded() + (held.unencoded() if held is not None else 0)

    count = await asyncio.to_thread(unencoded)
    if count >= ENCODING_NOTICE_AT:
        sink.show(Notice(encoding_notice(count, count * ENCODING_SECONDS)))
