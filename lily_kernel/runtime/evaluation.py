"""Trigger evals: how often the real selection path picks the right skill (`lily eval`).

Two formats are read, both JSON lists:
- Anthropic skill-creator's trigger evals, one file per skill, kept at
  `<skill>/evals/trigger_evals.json`: `{"query": ..., "should_trigger": true|false}`. The
  skill is the folder the `evals/` folder sits in.
- A workspace routing set: `{"query": ..., "skill": "<name>" | null | ["a", "b"]}`, the
  skill expected (a list: any of them is right; null: none should be selected).

Each query runs `runs` times, each in a fresh session of the workspace, through the same
path a chat cell takes up to its skill (`LilyRuntime.select_skill`): the model is asked,
nothing is answered. A query passes when it was right in at least half its runs (the
Agent Skills guide's 0.5 trigger threshold). The ranker alone (the shortlist's best
match, no model) is measured beside it, on the same queries.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lily_kernel.errors import UsageError
from lily_kernel.prompting.selection import request_shortlist
from lily_kernel.skills import DiagnosticKind, SkillSnapshot

__all__ = ["EvalItem", "EvalReport", "ItemResult", "load_eval_items", "ranker_choice",
           "run_eval", "trigger_eval_files"]

TRIGGER_FILE = Path("evals") / "trigger_evals.json"
MAX_EVAL_BYTES = 8 * 1024 * 1024
Select = Callable[[str], Awaitable[str | None]]


@dataclass(frozen=True)
class EvalItem:
    """One query and what is right for it: a skill it should (or should not) trigger,
    or the skills a routing set accepts (None: no skill)."""

    query: str
    source: str
    accepted: frozenset[str | None] = frozenset()
    skill: str | None = None  # a trigger eval's skill
    should_trigger: bool = True

    def right(self, selected: str | None) -> bool:
        if self.skill is not None:
            return (selected == self.skill) == self.should_trigger
        return selected in self.accepted

    def expected(self) -> str:
        """What is right, as the report says it."""
        if self.skill is not None:
            return self.skill if self.should_trigger else f"not {self.skill}"
        return " or ".join(sorted(a or "(none)" for a in self.accepted))


def ranker_choice(snapshot: SkillSnapshot, query: str) -> str | None:
    """The ranker alone: the request's best model-visible match, if it is relevant."""
    candidates = request_shortlist(snapshot, query).candidates
    return candidates[0] if candidates else None


def trigger_eval_files(snapshot: SkillSnapshot) -> list[Path]:
    """The trigger-eval files the snapshot's skills carry, by skill name."""
    found = (Path(s.path).parent / TRIGGER_FILE for s in snapshot.skills)
    return [path for path in found if path.is_file()]


def _read(path: Path) -> Any:
    if not path.is_file():
        raise UsageError(f"{path}: {'not a file' if path.exists() else 'does not exist'}.")
    if path.stat().st_size > MAX_EVAL_BYTES:
        raise UsageError(f"{path}: larger than {MAX_EVAL_BYTES // 1024 // 1024} MiB.")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read it ({exc}).") from None
    except ValueError as exc:
        raise UsageError(f"{path}: not JSON ({exc}).") from None
    except RecursionError:  # json's decoder recurses per bracket (`[[[[…`)
        raise UsageError(f"{path}: nested too deeply to read as JSON.") from None


def _names(value: Any, where: str, snapshot: SkillSnapshot) -> frozenset[str | None]:
    names: list[Any] = value if isinstance(value, list) else [value]
    if not names or not all(n is None or isinstance(n, str) for n in names):
        raise UsageError(f"{where}: \"skill\" must be a skill name, null or a list of names.")
    unknown = sorted(n for n in names if n is not None and snapshot.get(n) is None)
    held = [d for d in snapshot.diagnostics
            if d.kind is DiagnosticKind.UNTRUSTED and d.skill in unknown]
    if held:
        raise UsageError(f"{where}: the skill '{held[0].skill}' is {held[0].reason}.")
    if unknown:
        raise UsageError(f"{where}: no skill named '{unknown[0]}' in this workspace's "
                         "snapshot (lily skills lists them).")
    return frozenset(names)


def _skill_of(path: Path, snapshot: SkillSnapshot) -> str:
    """The skill a trigger-eval file belongs to: the folder its `evals/` sits in."""
    folder = path.resolve().parent.parent
    for skill in snapshot.skills:
        if Path(skill.path).resolve().parent == folder:
            return skill.name
    raise UsageError(f"{path}: a trigger-eval file (should_trigger) must sit in "
                     "<skill>/evals/ of a skill of this workspace's snapshot.")


def load_eval_items(paths: list[Path], snapshot: SkillSnapshot) -> list[EvalItem]:
    """Every query of the files, checked: a missing file, JSON that is not a list of
    queries, or a skill not in the snapshot is a UsageError naming the file and entry."""
    items: list[EvalItem] = []
    for path in paths:
        data = _read(path)
        if not isinstance(data, list) or not data:
            raise UsageError(f"{path}: must be a non-empty JSON list of queries.")
        skill: str | None = None
        for number, entry in enumerate(data, 1):
            where = f"{path}, entry {number}"
            if not isinstance(entry, dict) or not isinstance(entry.get("query"), str) \
                    or not entry["query"].strip():
                raise UsageError(f"{where}: must be an object with a non-empty \"query\".")
            if "should_trigger" in entry:
                if not isinstance(entry["should_trigger"], bool):
                    raise UsageError(f"{where}: \"should_trigger\" must be true or false.")
                skill = skill or _skill_of(path, snapshot)
                items.append(EvalItem(entry["query"], str(path), skill=skill,
                                      should_trigger=entry["should_trigger"]))
            elif "skill" in entry:
                items.append(EvalItem(entry["query"], str(path),
                                      accepted=_names(entry["skill"], where, snapshot)))
            else:
                raise UsageError(f"{where}: needs \"should_trigger\" (a trigger eval) or "
                                 "\"skill\" (a routing set).")
    return items


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
