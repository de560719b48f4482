"""Runs may write the workspace's skills/ (issue 36: a skill the person asks Lily to make
is made where their skills live), and what they write there waits for the person's
trust (tests/llm/test_kernel_skill_write.py follows it through a kernel). Here, as an
attacker would, with real bubblewrap and the session's own tool context: nothing else
of Lily's becomes writable (`.claude/skills`, `.agents/skills`, lily.yaml, persona/),
skills/ cannot be moved away or made a link to somewhere else, and where trust comes
from the environment (LILY_TRUST, which holds nothing) skills/ stays read-only."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from lily_kernel.environment import Workspace
from lily_kernel.execution.limits import Limits
from lily_kernel.execution.plan import plan_process
from lily_kernel.execution.runner import RunResult, run_process
from lily_kernel.tools.context import ToolContext
from tests.conftest import skill_text, write_skill
from tests.core.test_scripts import sandbox_or_skip

SKILL = "printf -- '---\\nsummary: Made by a run\\n---\\nDo it.\\n'"


def _session(root: Path, trust: str = "") -> tuple[Path, ToolContext]:
    """A person's workspace holding one skill, and its session's tool context (`trust`:
    LILY_TRUST)."""
    workspace = (root / "workspace")
    write_skill(workspace / "skills", "report", skill_text("Write the report"))
    (workspace / "lily.yaml").write_text("agent: default\n")
    environ = {"HOME": str(root / "home"), "LILY_HOME": str(root / "home" / ".lily"),
               "LILY_TRUST": trust}
    (root / "home").mkdir()
    return workspace.resolve(), Workspace.load(workspace, environ).tool_context


def _run(ctx: ToolContext, command: str) -> RunResult:
    environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent"}
    plan = plan_process(["/bin/sh", "-c", command], ctx.workspace, ctx.run_protected,
                        environ, sandbox_or_skip(), limits=Limits())
    return asyncio.run(run_process(plan, 60))


def test_a_run_writes_skills_and_nothing_else_of_lilys(tmp_path: Path) -> None:
    workspace, ctx = _session(tmp_path)
    skills = workspace / "skills"
    # The file tools still may not write it; runs may.
    assert skills in ctx.protected and skills not in ctx.run_protected
    assert workspace / ".claude" / "skills" in ctx.run_protected
    result = _run(ctx, (
        f"mkdir -p skills/new-skill/scripts && {SKILL} > skills/new-skill/SKILL.md && "
        "echo 'print(1)' > skills/new-skill/scripts/x.py && "
        "echo 'Changed.' >> skills/report/SKILL.md && echo made; "
        f"for r in .claude/skills .agents/skills; do mkdir -p $r/x && {SKILL} > $r/x/SKILL.md; "
        "done; echo 'policy: auto' > lily.yaml; mkdir -p persona/default; "
        "mv skills moved; rmdir skills; ln -sT /tmp skills; echo tried"))
    out = result.output
    assert "made\n" in out and "tried" in out, out
    assert (skills / "new-skill" / "SKILL.md").read_text().startswith("---\nsummary: Made")
    assert (skills / "new-skill" / "scripts" / "x.py").is_file()
    assert (skills / "report" / "SKILL.md").read_text().endswith("Changed.\n")
    # skills/ is pinned: neither moved away nor replaced by a link.
    assert "moved" not in os.listdir(workspace) and not skills.is_symlink()
    assert "Device or resource busy" in out, out
    # The rest of Lily's own names stay as they were: read-only or set aside.
    assert (workspace / "lily.yaml").read_text() == "agent: default\n"
    for name in (".claude", ".agents", "persona"):
        assert not (workspace / name).exists(), name
    [aside] = (workspace / ".lily" / "removed").iterdir()
    assert (aside / ".claude" / "skills" / "x" / "SKILL.md").is_file()


def test_a_run_cannot_make_skills_a_link_elsewhere(tmp_path: Path) -> None:
    """With no skills/ yet, a run that makes one as a link (to the person's own skills,
    or to a folder another workspace trusted) has it set aside after the run: Lily never
    reads a skills/ a run pointed elsewhere."""
    workspace, ctx = _session(tmp_path)
    (workspace / "skills" / "report" / "SKILL.md").unlink()
    (workspace / "skills" / "report").rmdir()
    (workspace / "skills").rmdir()
    elsewhere = tmp_path / "trusted" / "skills"
    write_skill(elsewhere, "helper", skill_text("Someone else's"))
    result = _run(ctx, f"ln -s {elsewhere} skills && echo linked")
    assert "linked" in result.output and "skills" in result.output.split("[removed", 1)[1]
    assert not os.path.lexists(workspace / "skills")
    [aside] = (workspace / ".lily" / "removed").iterdir()
    assert os.readlink(aside / "skills") == str(elsewhere)
    # A real folder it makes stays: the skill in it waits for trust.
    result = _run(ctx, f"mkdir -p skills/made && {SKILL} > skills/made/SKILL.md && echo ok")
    assert "ok" in result.output and "[removed" not in result.output, result.output
    assert (workspace / "skills" / "made" / "SKILL.md").is_file()


def test_trusted_by_the_environment_skills_stay_read_only(tmp_path: Path) -> None:
    """LILY_TRUST=workspace trusts whatever the folder holds, and holds nothing: a skill
    a run wrote would apply without the person's yes, so runs may not write skills/."""
    workspace, ctx = _session(tmp_path, trust="workspace")
    assert workspace / "skills" in ctx.run_protected
    result = _run(ctx, f"mkdir -p skills/new-skill; {SKILL} > skills/new-skill/SKILL.md; "
                  "echo 'Changed.' >> skills/report/SKILL.md; echo tried")
    assert "tried" in result.output and "Read-only file system" in result.output
    assert not (workspace / "skills" / "new-skill").exists()
    assert (workspace / "skills" / "report" / "SKILL.md").read_text() == skill_text(
        "Write the report")
