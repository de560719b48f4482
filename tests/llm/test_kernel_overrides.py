"""Skill-defined overrides through a real Lily kernel (jupyter_client over ZeroMQ), the
loopback model server and a real sandbox: a skill's `model:` answers its turn where the
person's LILY_SKILL_MODELS allows it (the server sees the name; the footer names it),
and is refused, the cell saying why, where not; its `allowed-tools` pre-approve the
shell without a question where LILY_SKILL_PREAPPROVAL is on ("allowed by skill", a
`skill_grant` event), and the person's model answers the next turn again."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from tests.core.test_scripts import sandbox_or_skip
from tests.kernel.conftest import lily_kernel
from tests.llm.test_kernel_skills import log_events
from tests.support.openai_server import OpenAIServer, Reply, tool_call

OVERRIDES = FIXTURES / "overrides"


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    sandbox_or_skip()


def start(server: OpenAIServer, root: Path, **env: str) -> Any:
    workspace, home = root / "workspace", root / "home"
    workspace.mkdir(parents=True)
    for name in ("small", "big"):  # the person's own skills (their user root)
        shutil.copytree(OVERRIDES / name, home / ".lily" / "skills" / name)
    settings = {"LILY_MODEL": "openai/person-model", "LILY_API_BASE": server.base_url,
                "OPENAI_API_KEY": "sk-overrides-not-a-key", "LILY_STREAM": "0",
                "LILY_EVENT_LOG": "1", "LILY_RETRY_BACKOFF": "0.01", **env}
    return lily_kernel(workspace, home, **settings)


def script_shell(server: OpenAIServer, command: str) -> None:
    server.replies.clear()
    server.script(Reply(tool_calls=[tool_call("shell", {"command": command}, "s0")]),
                  Reply(text="Listed."))


def test_a_skills_model_and_pre_approval_where_the_person_allows_them(
        server: OpenAIServer, tmp_path: Path) -> None:
    with start(server, tmp_path, LILY_SKILL_MODELS="openai/skill-small",
               LILY_SKILL_PREAPPROVAL="1") as kernel:
        script_shell(server, "echo granted")
        sent = len(server.requests)
        run = kernel.execute("/skill small list it", allow_stdin=False)  # asked: refused
        assert run.status == "ok", run.reply
        assert [r["model"] for r in server.requests[sent:]] == ["skill-small", "skill-small"]
        assert "Skill small runs on openai/skill-small" in run.plain
        assert "Tool shell: allowed by skill small" in run.plain
        assert "[exit code 0]\ngranted" in str(server.requests[-1]["messages"][-1]["content"])
        assert "openai/skill-small" in run.plain.split("Listed.", 1)[1]  # the footer
        assert [(g["skill"], g["tool"]) for g in log_events(kernel, "skill_grant")] == [
            ("small", "shell")]
        assert log_events(kernel, "approval") == []
        assert {c["model"] for c in log_events(kernel, "model_call")} == {"openai/skill-small"}
        # The skill's model lasts its turn: the next one is the person's.
        server.replies.clear()
        server.script(Reply(text="Hello."))
        plain = kernel.execute("Hello", allow_stdin=False)
        assert server.requests[-1]["model"] == "person-model"
        assert "openai/person-model" in plain.plain.split("Hello.", 1)[1]
        # A model the person did not allow: theirs answers, and the cell says why.
        server.replies.clear()
        server.script(Reply(text="Brief."))
        refused = kernel.execute("/skill big answer", allow_stdin=False)
        assert server.requests[-1]["model"] == "person-model"
        assert ("Skill big asks for the model openai/skill-big; answering with "
                "openai/person-model instead: openai/skill-big is not in LILY_SKILL_MODELS"
                in refused.plain)
        assert "openai/person-model" in refused.plain.split("Brief.", 1)[1]


def test_without_the_persons_settings_the_skill_only_asks(server: OpenAIServer,
                                                          tmp_path: Path) -> None:
    with start(server, tmp_path) as kernel:
        script_shell(server, "echo asked")
        run = kernel.execute("/skill small list it", allow_stdin=False)  # no one to ask
        assert run.status == "ok", run.reply
        assert server.requests[-1]["model"] == "person-model"
        assert "is not in LILY_SKILL_MODELS" in run.plain
        assert "allowed by skill" not in run.plain
        assert "asked by default" in str(server.requests[-1]["messages"][-1]["content"])
        assert log_events(kernel, "skill_grant") == []
