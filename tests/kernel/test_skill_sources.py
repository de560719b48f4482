"""The seven places skills are kept, seen by a real Lily kernel (jupyter_client over
ZeroMQ): `/skills` lists a skill from each, with its level, and `/skill <name>` finds
a nested one. The kernel's HOME is the person's home folder (~/.agents, ~/.claude)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import skill_text, write_skill
from tests.kernel.conftest import lily_kernel


def test_a_kernel_lists_a_skill_from_each_standard_place(tmp_path: Path) -> None:
    workspace, home = tmp_path / "workspace", tmp_path / "home"
    places = {
        "ws-lily": workspace / "skills",
        "ws-nested": workspace / "skills" / "group" / "subgroup",
        "ws-agents": workspace / ".agents" / "skills",
        "ws-claude": workspace / ".claude" / "skills",
        "user-lily": home / ".lily" / "skills",
        "user-agents": home / ".agents" / "skills",
        "user-claude": home / ".claude" / "skills",
    }
    for name, folder in places.items():
        write_skill(folder, name, skill_text(f"Kept in {folder.relative_to(tmp_path)}"))
    with lily_kernel(workspace, home) as kernel:
        listing = kernel.execute("/skills")
        assert listing.status == "ok"
        for name, folder in places.items():
            row = next(line for line in listing.plain.splitlines() if line.startswith(name))
            level = "workspace" if name.startswith("ws-") else "user"
            assert f"Kept in {folder.relative_to(tmp_path)}" in row and level in row, row
        shown = kernel.execute("/help ws-nested")
        assert str(places["ws-nested"] / "ws-nested" / "SKILL.md") in shown.plain
