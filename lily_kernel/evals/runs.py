"""Trigger evals run: how often the real selection path picks the right skill, and what
came of each query, each skill and each confusion (`lily eval`).

Each query runs `runs` times, each in a fresh session of the workspace, through the same
path a chat cell takes up to its skill (`selected_skill`: the runtime's turn, up to its
selection): the model is asked, nothing is answered. A query passes when it was right in
at least half its runs (the Agent Skills guide's 0.5 trigger threshold). The ranker
alone (the shortlist's best match, no model) is measured beside it, on the same queries.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lily_kernel.evals.items import EvalItem
from lily_kernel.prompting.selection import request_shortlist
from lily_kernel.runtime.conversation import build_turn
from lily_kernel.runtime.sink import SilentSink
from lily_kernel.skills import SkillRanker, SkillSnapshot

if TYPE_CHECKING:
    from lily_kernel.runtime.runtime import LilyRuntime

__all__ = ["EvalReport", "ItemResult", "ranker_choice", "run_eval", "selected_skill"]

Select = Callable[[str], Awaitable[str | None]]


async def selected_skill(runtime: LilyRuntime, query: str) -> str | None:
    """The skill a chat message selects in the runtime's session, through the real
    selection path, without answering it; the history is untouched."""
    turn = await build_turn(runtime, query, None, SilentSink())
    selected = await turn.select()
    return selected.name if selected is not None else None


def ranker_choice(snapshot: SkillSnapshot, ranker: SkillRanker, query: str) -> str | None:
    """The ranker alone: the request's best model-visible match, if it is relevant."""
    candidates = request_shortlist(snapshot, ranker, query).candidates
    return candidates[0] if candidates else None


@dataclass
class ItemResult:
    """One query's runs: what each selected, how long each took, and the ranker's pick."""

    item: EvalItem
    ranker: str | None
    selected: list[str | None] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """skill-creator's rule: a query that should trigger its skill passes when the
        skill was selected in at least half the runs; one that should not, when in
        fewer than half; a routing query, when it was right in at least half."""
        item, runs = self.item, len(self.selected)
        if item.skill is not None and not item.should_trigger:
            return 2 * sum(s == item.skill for s in self.selected) < runs
        return 2 * sum(map(item.right, self.selected)) >= runs

    @property
    def ranker_passed(self) -> bool:
        return self.item.right(self.ranker)


@dataclass(frozen=True)
class EvalReport:
    model: str
    runs: int
    results: list[ItemResult]
    ranked_by: str = "words"  # the ranker's: "words and meaning", or "words only (why)"

    @property
    def accuracy(self) -> float:
        return sum(r.passed for r in self.results) / len(self.results)

    @property
    def ranker_accuracy(self) -> float:
        return sum(r.ranker_passed for r in self.results) / len(self.results)

    @property
    def seconds_per_query(self) -> float:
        times = [t for r in self.results for t in r.seconds]
        return sum(times) / len(times)

    def skills(self) -> dict[str, dict[str, Any]]:
        """Per skill: the queries that want it alone, the share of their runs that
        selected it (its trigger rate), and the runs that selected it where it was not
        right. (A query accepting several skills counts for none of them.)"""
        table: dict[str, dict[str, Any]] = {}
        for result in self.results:
            item = result.item
            named = {a for a in item.accepted if a}
            wanted = ({item.skill} if item.skill and item.should_trigger else
                      named if item.skill is None and len(named) == 1 else set())
            for name in wanted:
                row = table.setdefault(name, {"queries": 0, "triggered": 0, "runs": 0,
                                              "false_triggers": 0})
                row["queries"] += 1
                row["runs"] += len(result.selected)
                row["triggered"] += sum(s == name for s in result.selected)
            for selected in result.selected:
                if selected and selected not in wanted and not item.right(selected):
                    row = table.setdefault(selected, {"queries": 0, "triggered": 0,
                                                      "runs": 0, "false_triggers": 0})
                    row["false_triggers"] += 1
        for row in table.values():
            row["trigger_rate"] = row["triggered"] / row["runs"] if row["runs"] else None
        return dict(sorted(table.items()))

    def confusions(self) -> list[tuple[str, str, int]]:
        """(what was right, what was selected instead, how many runs), most first."""
        counted = Counter((r.item.expected(), s or "(none)") for r in self.results
                          for s in r.selected if not r.item.right(s))
        return sorted(((e, s, n) for (e, s), n in counted.items()),
                      key=lambda row: (-row[2], row[0], row[1]))

    def as_json(self) -> dict[str, Any]:
        return {
            "model": self.model, "runs": self.runs, "queries": len(self.results),
            "accuracy": self.accuracy, "ranker_accuracy": self.ranker_accuracy,
            "ranked_by": self.ranked_by,
            "seconds_per_query": self.seconds_per_query, "skills": self.skills(),
            "confusions": [{"expected": e, "selected": s, "runs": n}
                           for e, s, n in self.confusions()],
            "items": [{"query": r.item.query, "expected": r.item.expected(),
                       "selected": r.selected, "passed": r.passed, "ranker": r.ranker,
                       "ranker_passed": r.ranker_passed, "seconds": r.seconds,
                       "source": r.item.source} for r in self.results],
        }


async def run_eval(items: list[EvalItem], select: Select, best: Callable[[str], str | None],
                   runs: int, model: str,
                   progress: Callable[[int, int], None] = lambda done, total: None,
                   ranked_by: Callable[[], str] = lambda: "words") -> EvalReport:
    """Run every query `runs` times through `select` (a fresh session each time); `best`
    is the ranker alone, `ranked_by` how it ranks. `progress(done, total)` after each
    run."""
    results = [ItemResult(item, best(item.query)) for item in items]
    total, done = len(items) * runs, 0
    for result in results:
        for _ in range(runs):
            began = time.perf_counter()
            result.selected.append(await select(result.item.query))
            result.seconds.append(time.perf_counter() - began)
            done += 1
            progress(done, total)
    return EvalReport(model, runs, results, ranked_by())
