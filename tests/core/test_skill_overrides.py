"""skills/overrides.py: a skill's frontmatter only asks; the person's own settings decide
(`model:` against LILY_SKILL_MODELS; `allowed-tools` as pre-approval under
LILY_SKILL_PREAPPROVAL, never over a deny or the person's ask, never for a skill changed
since it was trusted, never in an untrusted folder). And `disable-model-invocation` is
enforced: the model cannot load such a skill."""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass, replace
from typing import Any

import pytest

from lily_kernel.config import ToolsConfig
from lily_kernel.errors import ToolRefusedError
from lily_kernel.events import EventLog
from lily_kernel.runtime.skill_choice import SkillChoice
from lily_kernel.runtime.skill_grants import SkillGrants
from lily_kernel.runtime.skill_model import choose_skill_model
from lily_kernel.runtime.tool_gate import ToolGate
from lily_kernel.skills import Skill, SkillSnapshot
from lily_kernel.skills.fields import Frontmatter
from lily_kernel.skills.overrides import (
    Grant,
    ModelRefusal,
    OverrideSettings,
    ignored_keys,
    model_decision,
    override_settings,
    pre_approval,
)
from lily_kernel.tools import ActiveSkill, Tool, ToolContext, ToolRegistry
from lily_kernel.tools.policy import configured_policy
from tests.conftest import FIXTURES
from tests.support.sink import RecordingSink

ON = OverrideSettings(models=frozenset({"openai/small"}), preapproval=True)


def skill(source: Any = "user", allowed: tuple[str, ...] | None = ("Bash",),
          trusted: str | None = None, **extra: Any) -> Skill:
    return Skill(name="deploy", source=source, path="/s/deploy/SKILL.md", digest="d1",
                 summary="Deploys.", allowed_tools=allowed, extra=extra,
                 trusted_digest=trusted)


def grant(s: Skill, tool: str = "shell", kept_by: frozenset[str] | None = frozenset({"bash"}),
          **kw: Any) -> Grant:
    settings = kw.pop("settings", ON)
    return pre_approval(s, tool, kept_by, **{"asked_by_default": True, "settings": settings,
                                             "folder_trusted": True, "changed": False, **kw})


def test_settings_come_from_the_persons_environment_and_are_off_unset() -> None:
    assert override_settings({}) == OverrideSettings()
    read = override_settings({"LILY_SKILL_MODELS": " openai/a, openai/b ,",
                              "LILY_SKILL_PREAPPROVAL": "true"})
    assert read == OverrideSettings(frozenset({"openai/a", "openai/b"}), True)
    assert not override_settings({"LILY_SKILL_PREAPPROVAL": "no"}).preapproval


def test_a_skills_model_is_used_only_when_the_person_allows_it() -> None:
    assert model_decision(skill(model="openai/small"), ON) == "openai/small"
    assert model_decision(skill(model="openai/big"), ON) is ModelRefusal.NOT_ALLOWED
    assert model_decision(skill(model="openai/small"), OverrideSettings()) \
        is ModelRefusal.NOT_ALLOWED
    assert model_decision(skill(model="openai/any"),
                          OverrideSettings(models=frozenset({"*"}))) == "openai/any"
    assert model_decision(skill(), ON) is None  # asks for none


def test_pre_approval_granted_only_where_every_condition_holds() -> None:
    assert grant(skill()) is Grant.GRANTED
    assert grant(skill(), settings=replace(ON, preapproval=False)) is Grant.OFF
    assert grant(skill(allowed=("Read",))) is Grant.NOT_LISTED
    assert grant(skill(allowed=None)) is Grant.NOT_LISTED
    # A deny, the person's tools.ask, an untrusted folder's or the call's own question:
    # not "asked by default", never pre-approved.
    assert grant(skill(), asked_by_default=False) is Grant.NOT_ASKED_BY_DEFAULT
    assert grant(skill(), folder_trusted=False) is Grant.UNTRUSTED_FOLDER
    # A skill that arrived with the folder: trusted at its digest, unchanged since.
    assert grant(skill("workspace")) is Grant.NOT_TRUSTED
    assert grant(skill("workspace", trusted="f1")) is Grant.GRANTED
    assert grant(skill("workspace", trusted="f1"), changed=True) is Grant.CHANGED
    assert grant(skill("project", trusted="f1"), changed=True) is Grant.CHANGED
    # python is kept by `Bash` of any command (its kept_by), not by `Bash(git:*)`.
    python = frozenset({"python", "bash(*)"})
    assert grant(skill(), "python", python) is Grant.GRANTED
    assert grant(skill(allowed=("Bash(git:*)",)), "python", python) is Grant.NOT_LISTED


def test_ignored_keys_are_the_extra_ones_lily_does_not_act_on() -> None:
    assert ignored_keys(skill(model="m", context="fork", hooks={}, effort="high")) == (
        "context", "effort", "hooks")


def test_the_grant_is_an_event_and_a_line_in_the_cell(tmp_path: Any) -> None:
    log_path = tmp_path / "events.jsonl"
    log = EventLog(log_path, "s")
    tool = Tool(name="shell", description="", args_model=dict,
                handler=None,  # type: ignore[arg-type]  # never run here
                kept_by=frozenset({"bash"}), asked=True)
    sink = RecordingSink()
    folder = ActiveSkill("deploy", tmp_path)
    grants = SkillGrants(ON, lambda: True, log)
    assert grants.granted(sink, tool, skill(), folder)
    assert sink.notices == [
        "Tool shell: allowed by skill deploy (not asked: LILY_SKILL_PREAPPROVAL)"]
    assert '"event": "skill_grant"' in log_path.read_text()
    assert '"tool": "shell"' in log_path.read_text()
    untrusted = SkillGrants(ON, lambda: False, log)
    assert not untrusted.granted(RecordingSink(), tool, skill(), folder)
    changed = ActiveSkill("deploy", tmp_path, changed=lambda: "changed on disk")
    assert not grants.granted(RecordingSink(), tool, skill("workspace", trusted="f1"),
                              changed)
    assert log_path.read_text().count("skill_grant") == 1


def test_the_model_the_turn_runs_on_and_the_line_saying_why() -> None:
    sink = RecordingSink()
    assert choose_skill_model(skill(model="openai/small"), ON, "openai/person", sink) \
        == "openai/small"
    assert choose_skill_model(skill(model="openai/big"), ON, "openai/person", sink) is None
    assert choose_skill_model(skill(), ON, "openai/person", sink) is None  # asks for none
    assert sink.notices == [
        "Skill deploy runs on openai/small (its model: allowed by LILY_SKILL_MODELS)",
        "Skill deploy asks for the model openai/big; answering with openai/person instead: "
        "openai/big is not in LILY_SKILL_MODELS (your own setting; docs/skills.md, "
        "Overrides)"]


def test_disable_model_invocation_is_enforced_the_model_cannot_load_it() -> None:
    hidden = replace(skill(), front=Frontmatter(disable_model_invocation=True))
    snapshot = SkillSnapshot(1, "x", (), (hidden,), ())
    choice = SkillChoice(snapshot, EventLog(None, "s"), RecordingSink())
    with pytest.raises(ToolRefusedError):
        choice.select("deploy")
    assert choice.active is None


@dataclass(frozen=True)
class _NoArgs:
    pass


async def _probe(args: _NoArgs, ctx: ToolContext) -> str:
    return "probed"


PROBE = Tool(name="probe", description="runs code", args_model=_NoArgs, handler=_probe,
             kept_by=frozenset({"probe"}), asked=True)


def gate_call(tmp_path: Any, tools: ToolsConfig, grants: bool, *answers: str
              ) -> tuple[str, list[str], list[str], str]:
    """One model call of `probe` through the real gate, its skill `deploy` active and
    listing it in allowed-tools: status, questions, notices, the log."""
    registry = ToolRegistry([PROBE])
    log_path = tmp_path / f"events-{len(list(tmp_path.iterdir()))}.jsonl"
    log = EventLog(log_path, "s")
    gate = ToolGate(registry, configured_policy(tools, registry), ToolContext(tmp_path), log,
                    grants=SkillGrants(ON, lambda: True, log) if grants else None)
    active = skill(allowed=("probe",))
    choice = SkillChoice(SkillSnapshot(1, "x", (), (active,), ()), log, RecordingSink(),
                         forced=active)
    sink = RecordingSink(*answers)
    outcome = asyncio.run(gate.run(sink, "probe", {}, "model", skill=choice.active_folder(),
                                   skills=choice))
    return (outcome.status, sink.questions, sink.notices,
            log_path.read_text() if log_path.exists() else "")


def test_at_the_gate_a_grant_replaces_only_the_default_question(tmp_path: Any) -> None:
    status, questions, notices, log = gate_call(tmp_path, ToolsConfig(), True)
    assert (status, questions) == ("ran", [])
    assert notices == ["Tool probe: allowed by skill deploy (not asked: "
                       "LILY_SKILL_PREAPPROVAL)"]
    assert '"event": "skill_grant"' in log
    # Not enabled: asked, as before.
    status, questions, _, log = gate_call(tmp_path, ToolsConfig(), False, "n")
    assert status == "refused" and len(questions) == 1 and "skill_grant" not in log
    # A deny wins: refused before anyone is asked, nothing granted.
    status, questions, _, log = gate_call(tmp_path, ToolsConfig(deny=("probe",)), True)
    assert status == "refused" and questions == [] and "skill_grant" not in log
    # The person's own `tools.ask` is asked all the same.
    status, questions, _, log = gate_call(tmp_path, ToolsConfig(ask=("probe",)), True, "n")
    assert status == "refused" and len(questions) == 1 and "skill_grant" not in log


def test_lily_validate_names_the_keys_lily_does_not_act_on(tmp_path: Any,
                                                           environ: dict[str, str]) -> None:
    from tests.core.test_cli import lily

    env = {**environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = lily("validate", str(FIXTURES / "overrides"), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout  # named, not an error
    assert done.stdout.splitlines() == [
        "ok          big (prompt_rewrite)",
        "ok          small (prompt_rewrite)",
        "ignored     small: not acted on by Lily: context, effort (docs/skills.md, "
        "Overrides)"]
