"""Lily spawned by a real JupyterHub (issue 38): the config docs/deploy.md gives admins
(docs/examples/jupyterhub_config.py), the pure-Python proxy, two people's single-user
servers, and through the proxy, as a browser would, a notebook session each over REST
and the kernel websocket: the trust question, `/skills`, `/python 6*7` in the sandboxed
Python kernel, a chat cell answered by the loopback model with the person's own key, a
restart and Run All answered from the record. Each person's Lily state stays in their
own home, and stopping a server leaves none of their processes behind.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import psutil
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.conftest import write_skill
from tests.hub.hub import Hub, person_processes, start_hub
from tests.hub.notebook_socket import NotebookSocket, text_of
from tests.support.kernel_ws import WsExecution
from tests.support.openai_server import OpenAIServer, fresh_tokens

pytestmark = pytest.mark.slow  # a hub, its proxy, servers, kernels and subkernels

PEOPLE = ("alice", "bob")
DEADLINE = 240.0  # seconds for one step on a loaded machine (a spawn, a kernel start)
NOTEBOOK = "work/talk.ipynb"  # in the person's home, which the server serves
CELLS = (("c-trust", "/trust"), ("c-skills", "/skills"), ("c-python", "/python 6*7"),
         ("c-chat", "Which notebook is this?"))
REPLAYED = "Replayed from the record"


@pytest.fixture(scope="module")
def model() -> Iterator[OpenAIServer]:
    with OpenAIServer(default=fresh_tokens()) as server:
        yield server


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory, model: OpenAIServer) -> Iterator[Hub]:
    base = tmp_path_factory.mktemp("hub")
    keys = base / "keys"  # each person's own key, read by the documented config
    keys.mkdir()
    for name in PEOPLE:
        (keys / name).write_text(f"sk-key-of-{name}\n")
        work = base / "homes" / name / "work"
        write_skill(work / "skills", f"{name}-notes",
                    f"---\nsummary: The notes skill of {name}'s project.\n---\n\nBody.\n")
    with start_hub(base, LILY_MODEL="openai/loop", LILY_API_BASE=model.base_url,
                   LILY_HUB_KEYS=str(keys)) as running:
        yield running


def ok(run: WsExecution) -> bool:
    return run.reply is not None and run.reply["status"] == "ok"


def failed(runs: list[WsExecution], hub: Hub) -> str:
    """What went wrong: each cell's reply and output, then the end of the hub's log
    (the servers' and kernels' logs go there too)."""
    cells = "\n".join(f"{run.reply!r}: {text_of(run)}" for run in runs)
    return f"{cells}\n--- the hub's log:\n{hub.log_text()[-5000:]}"


def save_notebook(hub: Hub, name: str) -> None:
    """The notebook as JupyterLab saves it (every cell with its id), through the
    contents API."""
    nb = new_notebook(cells=[new_code_cell(code) for _, code in CELLS])
    for cell, (cell_id, _) in zip(nb.cells, CELLS, strict=True):
        cell.id = cell_id
    nb.metadata["kernelspec"] = {"name": "lily", "display_name": "Lily", "language": "lily"}
    hub.request("PUT", f"{hub.server_path(name)}/api/contents/{NOTEBOOK}",
                {"type": "notebook", "format": "json", "content": nbformat.v4.upgrade(nb)})


def open_session(hub: Hub, name: str) -> str:
    """A notebook session with a Lily kernel, as JupyterLab opens one: its kernel's id."""
    session = hub.request("POST", f"{hub.server_path(name)}/api/sessions", {
        "path": NOTEBOOK, "name": "talk.ipynb", "type": "notebook",
        "kernel": {"name": "lily"}}, timeout=DEADLINE)
    assert session["kernel"]["name"] == "lily"
    return str(session["kernel"]["id"])


def run_all(hub: Hub, name: str, kernel_id: str) -> tuple[list[WsExecution], list[str]]:
    """Every cell of the notebook in order, over the kernel's websocket: the runs and
    the questions the kernel asked (each answered yes)."""
    with NotebookSocket(hub.ws_url(name, kernel_id), hub.token, answer="y",
                        timeout=DEADLINE) as ks:
        runs = [ks.cell(code, cell_id) for cell_id, code in CELLS]
        return runs, ks.questions


def session_events(workspace: Path) -> list[dict[str, Any]]:
    logs = sorted((workspace / ".lily" / "sessions").glob("*.jsonl"))
    return [json.loads(line) for log in logs for line in log.read_text().splitlines()]


def files_naming(folder: Path, text: str) -> list[Path]:
    """Files under `folder` whose bytes contain `text`."""
    needle = text.encode()
    return [p for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_two_people_each_get_their_own_lily_through_the_hub(
        hub: Hub, model: OpenAIServer) -> None:
    servers = {name: hub.spawn(name, timeout=DEADLINE) for name in PEOPLE}  # both running
    pids = {name: int(servers[name]["state"]["pid"]) for name in PEOPLE}

    for name in PEOPLE:
        home, other = hub.home(name), hub.home(next(p for p in PEOPLE if p != name))
        workspace = home / "work"
        save_notebook(hub, name)
        kernel_id = open_session(hub, name)

        first, questions = run_all(hub, name, kernel_id)
        assert all(ok(run) for run in first), failed(first, hub)
        _trust, skills, python, chat = first
        assert len(questions) == 1 and "trust" in questions[0].lower(), questions
        assert f"The notes skill of {name}'s project." in text_of(skills)
        assert f"{other.name}-notes" not in text_of(skills)  # the other person's skill
        assert "42" in text_of(python)  # the sandboxed Python kernel under the server
        answer = re.search(r"Answer \d+-[0-9a-f]{8}", text_of(chat))  # the model's token
        assert answer is not None, text_of(chat)
        assert model.headers[-1]["authorization"] == f"Bearer sk-key-of-{name}"

        tree = psutil.Process(pids[name]).children(recursive=True)
        commands = [" ".join(p.cmdline()) for p in tree]
        kernels = psutil.Process(pids[name]).children()  # the server's: its one kernel
        assert len(kernels) == 1 and "lily_kernel" in " ".join(kernels[0].cmdline()), commands
        assert kernels[0].environ()["JPY_SESSION_NAME"] == str(workspace / "talk.ipynb")
        assert any("bwrap" in c for c in commands), commands  # the Python kernel's sandbox

        asked = len(model.requests)
        hub.request("POST", f"{hub.server_path(name)}/api/kernels/{kernel_id}/restart",
                    timeout=DEADLINE)
        again, questions_again = run_all(hub, name, kernel_id)
        assert all(ok(run) for run in again), failed(again, hub)
        assert questions_again == []  # trusted in their own store, across the restart
        assert REPLAYED in text_of(again[3])
        assert answer.group() in text_of(again[3])  # the same answer, given again
        assert len(model.requests) == asked  # no model call
        assert "42" in text_of(again[2])

        # JPY_SESSION_NAME reached the kernel: the record names the notebook.
        turns = [e["data"] for e in session_events(workspace) if e["event"] == "turn"]
        assert turns and {t["notebook"] for t in turns} == {"talk.ipynb"}  # as it is shown
        assert {t["cell_id"] for t in turns} == {"c-chat"}
        # Their Lily state is in their own home, and only there.
        stored = json.loads((home / ".lily" / "trust.json").read_text())
        assert str(workspace) in json.dumps(stored)
        assert files_naming(other, str(home)) == []

    # Nothing of theirs in the hub's own home, nor in the home of the one running the test.
    assert not (hub.homes.parent / ".lily").exists()
    real_trust = Path(os.environ.get("HOME", "/nonexistent")) / ".lily" / "trust.json"
    assert not real_trust.exists() or str(hub.homes) not in real_trust.read_text()

    for name in PEOPLE:
        home = hub.home(name)
        theirs = person_processes(home)
        assert any("lily_kernel" in " ".join(p.cmdline()) for p in theirs)
        hub.stop_server(name, timeout=DEADLINE)
        _gone, alive = psutil.wait_procs(theirs, timeout=DEADLINE)
        assert alive == [], [p.cmdline() for p in alive]
        assert person_processes(home) == []
