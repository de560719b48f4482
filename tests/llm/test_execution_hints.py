"""#29 item 7 at the runtime level, with a scripted model: a model that cannot call tools,
following a skill that runs code it cannot run (a shell's; Python where the policy does
not offer it from the answer, issue 37), says so in one line (never a silent description); a
model that can call tools is not told anything; a chat cell that is plainly Python gets
a one-line hint about /python and still goes to the model."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lily_kernel.display.messages import PYTHON_CELL_HINT
from lily_kernel.llm.scripted import ScriptedModel
from lily_kernel.runtime import LilyRuntime
from tests.conftest import skill_text, write_skill
from tests.llm.test_skill_tools import reply
from tests.support.sink import RecordingSink

PLOTTING = ("---\nsummary: Plot data with matplotlib\n---\nPlot it:\n\n```python\n"
            "import matplotlib.pyplot as plt\nplt.plot([1, 2])\n```\n")


def start(workspace: Path, environ: dict[str, str], **extra: str) -> LilyRuntime:
    skills = workspace / "skills"
    write_skill(skills, "plotting", PLOTTING)
    write_skill(skills, "haiku", skill_text("Write a haiku"))
    write_skill(skills, "git-helper", "---\nsummary: Inspect a repository\nallowed-tools: "
                "Bash(git log:*)\n---\nLook at the history.\n")
    env = {**environ, "LILY_MODEL": "scripted/test", "LILY_EVENT_LOG": "1", **extra}
    return LilyRuntime.start(workspace, env, session_id="s1")


@pytest.fixture
def runtime(workspace: Path, environ: dict[str, str]) -> LilyRuntime:
    # `python` denied: a model without tools is not offered its answer's code either.
    return start(workspace, environ, LILY_TOOLS_DENY="python")


def run(runtime: LilyRuntime, code: str, model: ScriptedModel) -> RecordingSink:
    runtime.model = model
    sink = RecordingSink()
    asyncio.run(runtime.run_cell(code, sink))
    return sink


def said(sink: RecordingSink) -> list[str]:
    return [n for n in sink.notices if "cannot call tools" in n]


def test_a_model_without_tools_says_it_cannot_run_the_skills_code(runtime: LilyRuntime
                                                                   ) -> None:
    model = ScriptedModel(reply("Here is how you would plot it."), name="tiny",
                          supports_tools=False, context_window=8192)
    sink = run(runtime, "/skill plotting plot 1 and 2", model)
    assert said(sink) == [
        "Skill plotting runs code (python), and this model (tiny) cannot call tools: it "
        "can only describe the work. To have it done, configure a model that calls tools "
        "(LILY_MODEL, or model: in lily.yaml; docs/execution.md), or run code yourself "
        "with /python."]
    assert sink.replies == ["Here is how you would plot it."]  # and the turn goes on
    model = ScriptedModel(reply("I'd look at git log."), name="tiny", supports_tools=False,
                          context_window=8192)
    sink = run(runtime, "/skill git-helper what changed?", model)
    assert [n.split(",")[0] for n in said(sink)] == ["Skill git-helper runs code (shell)"]


def test_python_offered_from_the_answer_a_python_skill_is_not_beyond_it(
        workspace: Path, environ: dict[str, str]) -> None:
    """Where the policy offers `python`, a model without tools runs its answer's python
    block (runtime/answer_code.py): only a skill's shell commands are beyond it."""
    runtime = start(workspace, environ)
    model = ScriptedModel(reply("Here is how you would plot it."), name="tiny",
                          supports_tools=False, context_window=8192)
    assert said(run(runtime, "/skill plotting plot 1 and 2", model)) == []
    model = ScriptedModel(reply("I'd look at git log."), name="tiny", supports_tools=False,
                          context_window=8192)
    sink = run(runtime, "/skill git-helper what changed?", model)
    assert [n.split(",")[0] for n in said(sink)] == ["Skill git-helper runs code (shell)"]


def test_a_skill_that_runs_nothing_and_a_model_with_tools_are_not_told(runtime: LilyRuntime
                                                                        ) -> None:
    words = ScriptedModel(reply("Sea, salt."), name="tiny", supports_tools=False,
                          context_window=8192)
    assert said(run(runtime, "/skill haiku the sea", words)) == []
    tools = ScriptedModel(reply("Plotted."), name="big", supports_tools=True)
    assert said(run(runtime, "/skill plotting plot 1 and 2", tools)) == []


def test_a_plainly_python_cell_gets_a_hint_and_still_goes_to_the_model(runtime: LilyRuntime
                                                                        ) -> None:
    model = ScriptedModel(reply("It prints 1.414."), reply("Hello!"))
    sink = run(runtime, "import math\nprint(math.sqrt(2))", model)
    assert PYTHON_CELL_HINT in sink.notices
    assert sink.replies == ["It prints 1.414."]
    assert model.requests[0].messages[-1]["content"] == "import math\nprint(math.sqrt(2))"
    sink = run(runtime, "hello", model)
    assert PYTHON_CELL_HINT not in sink.notices and sink.replies == ["Hello!"]


def test_a_workspace_trusted_later_reaches_the_python_kernels_settings(
        workspace: Path, environ: dict[str, str]) -> None:
    """The kernel starts on first use: it takes the settings in force then, the limits
    and variables a lily.yaml trusted meanwhile included."""
    from lily_kernel.environment import Workspace

    (workspace / "lily.yaml").write_text("memory_limit_mb: 8192\nscript_env: [PROJECT_ROOT]\n")
    untrusted = {**environ, "LILY_TRUST": ""}
    runtime = LilyRuntime.start(workspace, untrusted, session_id="s1")
    held = (runtime.services.python.limits.memory_mb, runtime.services.python.allowed_env)
    assert held == (4096, ())  # raising and adding held until trusted
    runtime.take_up(Workspace.load(workspace, environ))  # trusted now
    assert (runtime.services.python.limits, runtime.services.python.allowed_env) == (
        runtime.services.scripts.limits, ("PROJECT_ROOT",))
    assert runtime.services.python.limits.memory_mb == 8192
    runtime.close()
