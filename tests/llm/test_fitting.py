"""A skill fits the model's window by one rule on every path, and a long read is said.

Forcing a large skill (`/skill rdkit …` with the embedded model's 8,192-token window)
answered "this message does not fit the model's context window… Shorten it" for a
10-word message, while the same skill chosen automatically worked, trimmed with a
notice; and a forced skill took 17 to 88 s to its first word with only `[*]` showing."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lily_kernel.llm import ScriptedModel
from lily_kernel.prompting.budget import skill_body_budget
from lily_kernel.runtime import LilyRuntime
from tests.conftest import write_skill
from tests.llm.test_conversation import call, reply
from tests.support.sink import RecordingSink

BIG_BODY = "\n".join(f"Step {i}: do the careful thing number {i} with the molecule."
                     for i in range(900))  # ~50,000 characters


def start(workspace: Path, environ: dict[str, str]) -> LilyRuntime:
    write_skill(workspace / "skills", "big", f"---\ndescription: Molecules\n---\n{BIG_BODY}\n")
    return LilyRuntime.start(workspace, {**environ, "LILY_MODEL": "scripted/test"})


def run(runtime: LilyRuntime, code: str, model: ScriptedModel) -> RecordingSink:
    runtime.model = model
    sink = RecordingSink()
    asyncio.run(runtime.run_cell(code, sink))
    return sink


def test_a_forced_large_skill_is_trimmed_to_fit_not_refused(workspace, environ) -> None:
    runtime = start(workspace, environ)
    model = ScriptedModel(reply("Done."), context_window=8_192)
    sink = run(runtime, "/skill big weigh aspirin", model)
    assert sink.replies == ["Done."]
    system = str(model.requests[0].messages[0]["content"])
    budget = skill_body_budget(8_192)
    assert budget is not None and len(system) < budget + 2_000
    assert "[The rest of this SKILL.md," in system
    assert any(n.startswith("Skill: big: its SKILL.md less its last") for n in sink.notices)


def test_a_skill_the_model_loads_is_fitted_by_the_same_rule(workspace, environ) -> None:
    runtime = start(workspace, environ)
    model = ScriptedModel(reply("", call("load_skill", name="big")), reply("Done."),
                          context_window=8_192)
    sink = run(runtime, "weigh aspirin", model)
    loaded = str(model.requests[1].messages[-1]["content"])
    budget = skill_body_budget(8_192)
    assert budget is not None and len(loaded) < budget + 1_000
    assert "[The rest of this SKILL.md," in loaded
    assert any("its SKILL.md less its last" in n for n in sink.notices)
    roomy = ScriptedModel(reply("", call("load_skill", name="big")), reply("Done."),
                          context_window=200_000)
    run(start_again(workspace, environ), "weigh aspirin", roomy)
    assert "[The rest of this SKILL.md," not in str(roomy.requests[1].messages[-1]["content"])


def start_again(workspace: Path, environ: dict[str, str]) -> LilyRuntime:
    return LilyRuntime.start(workspace, {**environ, "LILY_MODEL": "scripted/test"})


def test_a_long_read_on_this_machine_is_said_first(workspace, environ) -> None:
    runtime = start(workspace, environ)
    sink = run(runtime, "/skill big weigh aspirin",
               ScriptedModel(reply("Done."), context_window=8_192, reads=2_400))
    assert ("Reading the SKILL.md of 'big' and the conversation first: 2,400 tokens, "
            "about 8 s on this machine.") in sink.notices
    quick = run(runtime, "and now?", ScriptedModel(reply("Ok."), context_window=8_192,
                                                   reads=120))
    assert not any(n.startswith("Reading") for n in quick.notices)
