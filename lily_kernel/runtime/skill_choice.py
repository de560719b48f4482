"""A request's one skill: forced by the person, or selected by the model, at most once.

The model selects by `load_skill` (this is the tool context's `skills`) or, when it
cannot call tools, by a structured declaration; either way the selection is activated
here, logged (`skill_invoked`, `skill_loaded`) and shown the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lily_kernel.display import Notice
from lily_kernel.display.notices import skill_chosen
from lily_kernel.errors import ToolRefusedError
from lily_kernel.events import EventLog, SkillInvoked, SkillLoaded
from lily_kernel.prompting import loaded_skill_text, selection_refusal, skill_body
from lily_kernel.prompting.skill_text import bounded_body
from lily_kernel.runtime.sink import CellSink
from lily_kernel.skills import Skill, SkillSnapshot
from lily_kernel.skills.digest import DigestCache, folder_digest
from lily_kernel.tools import ActiveSkill

__all__ = ["SkillChoice"]


@dataclass
class SkillChoice:
    """The skill state of one request; the model's selection goes through `select`
    (load_skill) or `activate` (a declaration already checked against the catalog)."""

    snapshot: SkillSnapshot
    log: EventLog
    sink: CellSink
    forced: Skill | None = None
    loaded: Skill | None = None
    digests: DigestCache | None = None  # files' digests by their stat (skills/digest.py)
    body_max_chars: int | None = None  # what a SKILL.md may take (budget.skill_body_budget)

    @property
    def active(self) -> Skill | None:
        """The skill this request follows: forced by the person, or loaded by the model."""
        return self.forced or self.loaded

    @property
    def selecting(self) -> bool:
        """Whether the model chooses the skill (the person did not force one)."""
        return self.forced is None

    def active_folder(self) -> ActiveSkill | None:
        """The active skill as its own tools see it: its folder, whichever root it came
        from; a workspace skill the person trusted is compared with what they trusted
        before any of its files is read or run."""
        skill = self.active
        if skill is None:
            return None
        folder = Path(skill.path).parent
        trusted = skill.trusted_digest
        if trusted is None:
            return ActiveSkill(skill.name, folder, commands=skill.shell_commands)

        def changed() -> str | None:
            if folder_digest(str(folder), self.digests) == trusted:
                return None
            return (f"the skill '{skill.name}' changed on disk since it was trusted; its "
                    "files are not used until /reload_skills shows the change and you "
                    "trust it again")

        return ActiveSkill(skill.name, folder, changed, skill.shell_commands)

    def select(self, name: str) -> str:
        """`load_skill(name)`: activate the skill; the SKILL.md the model reads."""
        if self.forced is not None:
            raise ToolRefusedError(selection_refusal("forced", self.forced.name))
        if self.loaded is not None:
            raise ToolRefusedError(selection_refusal("loaded", self.loaded.name))
        skill = self.snapshot.get(name)
        if skill is None:
            raise ToolRefusedError(selection_refusal("unknown", name))
        if not skill.model_visible:
            raise ToolRefusedError(selection_refusal("person_only", skill.name))
        body, left = bounded_body(skill_body(skill), self.body_max_chars)
        self.activate(skill, skill_chosen(skill.name, "model", left=left))
        return loaded_skill_text(skill.name, body)

    def activate(self, skill: Skill, said: str) -> None:
        """`skill` is the request's one skill from now on (selected by the model, or the
        request's clear best match: `said` tells the person which, display/notices.py)."""
        self.loaded = skill
        self.log.emit(SkillInvoked(name=skill.name, mode="auto"))
        self.log.emit(SkillLoaded(name=skill.name, path=skill.path, digest=skill.digest))
        self.sink.show(Notice(said))
