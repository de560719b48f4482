"""The stable `lily skills --json` document (SPEC §9). Pure."""

from __future__ import annotations

import json
from typing import Any

from lily_kernel.skills import Skill, SkillSnapshot, shown_fields

__all__ = ["render_snapshot_json", "snapshot_document"]


def _skill_document(skill: Skill) -> dict[str, Any]:
    """Identity and summary, then the frontmatter fields marked `json` (their snapshot
    values: the alias is what is left after collisions)."""
    doc: dict[str, Any] = {"name": skill.name, "source": skill.source, "path": skill.path,
                           "summary": skill.summary}
    for f in shown_fields():
        if f.json:
            value = getattr(skill, f.attr)
            doc[f.attr] = list(value) if isinstance(value, tuple) else value
    return doc


def snapshot_document(snap: SkillSnapshot) -> dict[str, Any]:
    return {
        "version": snap.version,
        "digest": snap.digest,
        "skills": [_skill_document(s) for s in snap.skills],
        "diagnostics": [
            {"kind": d.kind.value, "skill": d.skill, "source": d.source, "path": d.path,
             "reason": d.reason}
            for d in snap.diagnostics
        ],
    }


def render_snapshot_json(snap: SkillSnapshot) -> str:
    """The document, one skill or diagnostic a line (greppable, and written by json's C
    encoder: the pure-Python indenting encoder took a tenth of the command's time)."""
    doc = snapshot_document(snap)

    def items(key: str) -> str:
        lines = [json.dumps(item, ensure_ascii=False) for item in doc[key]]
        return "[\n    " + ",\n    ".join(lines) + "\n  ]" if lines else "[]"

    return (f'{{\n  "version": {doc["version"]},\n  "digest": {json.dumps(doc["digest"])},\n'
            f'  "skills": {items("skills")},\n  "diagnostics": {items("diagnostics")}\n}}\n')
