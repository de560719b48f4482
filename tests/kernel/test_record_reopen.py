"""The notebook is the session across kernel restarts, through real Lily kernels
(jupyter_client over ZeroMQ) and the loopback model: a follow-up after a reopen reaches
the model with the earlier turns (JupyterLab's JPY_SESSION_NAME and cell ids, VS Code's
cell URIs, neither); a tool call replayed is asked again under `ask`. Run All after a
restart, an edited cell, the saved notebook winning: tests/kernel/test_record.py (one
module each, so the two workers share them: each test starts three or four kernels)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.kernel.conftest import Execution, LilyProcess, lily_kernel
from tests.kernel.test_record import CELLS, REPLAYED, save, server, workspace_for
from tests.llm.test_kernel_skills import execute_answering
from tests.support.openai_server import OpenAIServer, Reply, tool_call

__all__ = ["server"]  # the loopback model, a fixture of test_record.py


def execute_in_cell(kernel: LilyProcess, code: str, cell_id: str) -> Execution:
    """An execute_request carrying the cell's id in its metadata, as JupyterLab and VS
    Code send it."""
    msg = kernel.kc.session.msg("execute_request", {
        "code": code, "silent": False, "store_history": True, "user_expressions": {},
        "allow_stdin": False, "stop_on_error": True}, metadata={"cellId": cell_id})
    kernel.kc.shell_channel.send(msg)
    msg_id = msg["header"]["msg_id"]
    reply = kernel.kc.get_shell_msg(timeout=60)
    while reply["parent_header"].get("msg_id") != msg_id:  # a kernel_info of the start
        reply = kernel.kc.get_shell_msg(timeout=60)  # (sent again while it was slow)
    run = Execution(reply["content"])
    while True:
        out = kernel.kc.get_iopub_msg(timeout=60)
        if out["parent_header"].get("msg_id") != msg_id:
            continue
        if out["msg_type"] == "status" and out["content"]["execution_state"] == "idle":
            return run
        if out["msg_type"] not in ("status", "execute_input"):
            run.outputs.append(out)


def users(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


def test_a_follow_up_after_a_reopen_knows_what_was_said(server: OpenAIServer,
                                                        tmp_path: Path) -> None:
    workspace = workspace_for(tmp_path)
    path = workspace / "talk.ipynb"
    save(path, CELLS)
    settings = {"LILY_EVENT_LOG": "1", "LILY_API_BASE": server.base_url,
                "OPENAI_API_KEY": "sk-record-not-a-real-key-0000"}
    home = tmp_path / "home"
    server.script(Reply(text="Four."), Reply(tool_calls=[tool_call("read", {"path": "notes.md"})]))
    with lily_kernel(workspace, home, JPY_SESSION_NAME=str(path), **settings) as kernel:
        for cell_id, code in CELLS:
            assert execute_in_cell(kernel, code, cell_id).status == "ok"
    earlier = [code for _, code in CELLS]
    question = "Which was the first thing I asked?"

    # JupyterLab, reopened: JPY_SESSION_NAME and a new cell's id.
    with lily_kernel(workspace, home, JPY_SESSION_NAME=str(path), **settings) as kernel:
        run = execute_in_cell(kernel, question, "lab-new")
    assert users(server.requests[-1]) == [*earlier, question]
    assert run.plain.startswith("Continuing this notebook's conversation of ")

    # VS Code, the second cell deleted and the notebook saved: its cell URIs name the file.
    save(path, (CELLS[0], CELLS[2]))
    uri = f"vscode-notebook-cell:{path.as_posix()}#W3sZmlsZQ%3D%3D"
    with lily_kernel(workspace, home, **settings) as kernel:
        run = execute_in_cell(kernel, question, uri)
    assert users(server.requests[-1]) == [earlier[0], earlier[2], question]
    # The follow-up of the reopen above was never saved in the notebook: left out too.
    assert "Left out of the conversation, their cells are no longer in the notebook: " \
        f"'Read my notes', {question!r}." in run.plain

    # No notebook named: nothing to continue.
    with lily_kernel(workspace, home, **settings) as kernel:
        run = execute_in_cell(kernel, question, "lab-other")
    assert users(server.requests[-1]) == [question]
    assert "Continuing" not in run.plain


def test_a_replayed_tool_call_is_asked_again_under_ask(server: OpenAIServer,
                                                       tmp_path: Path) -> None:
    workspace = workspace_for(tmp_path, "tools:\n  ask: [read]\n")
    settings = {"LILY_EVENT_LOG": "1", "LILY_API_BASE": server.base_url,
                "OPENAI_API_KEY": "sk-record-not-a-real-key-0000"}
    home = tmp_path / "home"
    server.script(Reply(tool_calls=[tool_call("read", {"path": "notes.md"})]))
    with lily_kernel(workspace, home, **settings) as kernel:
        run, prompts = execute_answering(kernel, "Read my notes", ["y"])
        assert run.status == "ok" and len(prompts) == 1
    asked = len(server.requests)
    with lily_kernel(workspace, home, **settings) as kernel:  # restarted
        again, prompts_again = execute_answering(kernel, "Read my notes", ["y"])
    assert prompts_again == prompts  # asked again, never silently
    assert len(server.requests) == asked  # and answered from the record
    assert again.plain.startswith(REPLAYED)
    with lily_kernel(workspace, home, **settings) as kernel:
        declined, _ = execute_answering(kernel, "Read my notes", ["n"])
    assert len(server.requests) == asked + 1  # the live model reads the refusal
    assert str(server.requests[-1]["messages"][-1]["content"]).startswith("Refused:")
    assert "A tool's result differs from the record (step 2)" in declined.plain
