"""A skill's `allowed-tools` as pre-approval, applied at the tool gate: the one step
between "the policy asks by default" and the question (skills/overrides.py decides).

A grant is an event (`skill_grant`) and a line in the cell ("allowed by skill <name>");
the call is then recorded like any other (`tool_call`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lily_kernel.display import Notice
from lily_kernel.display.overrides import pre_approved
from lily_kernel.events import EventLog, SkillGrant
from lily_kernel.runtime.sink import CellSink
from lily_kernel.skills import Skill
from lily_kernel.skills.overrides import Grant, OverrideSettings, pre_approval
from lily_kernel.tools import ActiveSkill, Tool

__all__ = ["SkillGrants"]


@dataclass(frozen=True)
class SkillGrants:
    """The session's pre-approvals: the person's settings (their environment) and
    whether the folder is trusted now (read at each call: trust given mid-session
    counts from the next call)."""

    settings: OverrideSettings
    folder_trusted: Callable[[], bool]
    log: EventLog

    def granted(self, sink: CellSink, tool: Tool, skill: Skill | None,
                active: ActiveSkill | None) -> bool:
        """Whether the active skill pre-approves this call, which the policy asks about
        only by default; a grant is logged and shown."""
        if skill is None or active is None or not self.settings.preapproval:
            return False
        grant = pre_approval(skill, tool.name, tool.kept_by, asked_by_default=True,
                             settings=self.settings, folder_trusted=self.folder_trusted(),
                             changed=active.changed() is not None)
        if grant is not Grant.GRANTED:
            return False
        self.log.emit(SkillGrant(skill=skill.name, tool=tool.name, digest=skill.digest))
        sink.show(Notice(pre_approved(tool.name, skill.name)))
        return True
