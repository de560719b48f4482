"""The stable `lily skills --json` document (SPEC §9). Pure."""

from __future__ import annotations

import json
from typing import Any

from lily_kernel.skills import SkillSnapshot

__all__ = ["render_snapshot_json", "snapshot_document"]


def snapshot_document(snap: SkillSnapshot) -> dict[str, Any]:
    return {
        "version": snap.version,
        "digest": snap.digest,
        "skills": [
            {
                "name": s.name,
                "source": s.source,
                "path": s.path,
                "summary": s.summary,
                "invocation_mode": s.invocation_mode,
                "command": s.command,
                "command_tool": s.command_tool,
                "requires_tools": list(s.requires_tools),
            }
            for s in snap.skills
        ],
        "diagnostics": [
            {"kind": d.kind.value, "skill": d.skill, "source": d.source, "path": d.path,
             "reason": d.reason}
            for d in snap.diagnostics
        ],
    }


def render_snapshot_json(snap: SkillSnapshot) -> str:
    return json.dumps(snapshot_document(snap), indent=2, ensure_ascii=False) + "\n"
