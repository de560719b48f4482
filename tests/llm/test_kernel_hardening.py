"""Hardening, through a real Lily kernel and the loopback model: what the model reads of
a tool call passes the same redactor as the notebook and the log."""

from __future__ import annotations

from pathlib import Path

from tests.kernel.conftest import lily_kernel
from tests.support.openai_server import OpenAIServer, Reply, tool_call

SECRET = "sk-hardening-SECRET-5551234567"


def test_a_tool_result_holding_a_credential_reaches_the_model_redacted(
        server: OpenAIServer, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    # A file that holds the key, as a .env or a script's output would.
    (workspace / "notes.txt").write_text(f"OPENAI_API_KEY={SECRET}\nother line\n")
    server.replies.clear()
    server.script(Reply(tool_calls=[tool_call("read", {"path": "notes.txt"})]),
                  Reply(text="Read it."))
    with lily_kernel(workspace, tmp_path / "home", LILY_MODEL="openai/hardening",
                     LILY_API_BASE=server.base_url, OPENAI_API_KEY=SECRET,
                     LILY_STREAM="0") as kernel:
        run = kernel.execute("What is in notes.txt?")
        assert run.status == "ok"
    sent = str(server.requests[-1]["messages"][-1]["content"])
    assert "other line" in sent and "[redacted]" in sent
    assert SECRET not in sent and SECRET[-12:] not in sent
