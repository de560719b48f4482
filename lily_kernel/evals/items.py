"""Trigger-eval files, read and checked into the queries `lily eval` runs.

Two formats are read, both JSON lists:
- Anthropic skill-creator's trigger evals, one file per skill, kept at
  `<skill>/evals/trigger_evals.json`: `{"query": ..., "should_trigger": true|false}`. The
  skill is the folder the `evals/` folder sits in.
- A workspace routing set: `{"query": ..., "skill": "<name>" | null | ["a", "b"]}`, the
  skill expected (a list: any of them is right; null: none should be selected).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lily_kernel.errors import UsageError
from lily_kernel.skills import DiagnosticKind, SkillSnapshot

__all__ = ["MAX_EVAL_BYTES", "TRIGGER_FILE", "EvalItem", "load_eval_items", "trigger_eval_files"]

TRIGGER_FILE = Path("evals") / "trigger_evals.json"
MAX_EVAL_BYTES = 8 * 1024 * 1024


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
