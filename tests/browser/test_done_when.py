"""Issue 36's "Done when", in JupyterLab (headless Chromium): a tool-calling model (the
loopback model server, scripting the calls a model makes) and `python_kernel` naming
the person's venv under their home folder (`~/.venvs/ds`). "install tablekit and show
me the first rows of data.csv" asks once for the package index's host (answered `a` in
the page), installs, runs, and shows the table; "commit this" commits; a host nobody
allowed is refused in one line, and its server sees no connection.

The index is laid out as PyPI's is: its pages on `pypi.org`, the files they link on
`files.pythonhosted.org` (one question covers both, network/policy.py's FILE_HOSTS),
served by this test on loopback over plain HTTP on a port of its own (the person's
pip.conf names it). The proxy refuses a name that resolves to loopback (only an exact
`127.0.0.1:port` entry opens one, unasked), so to be asked about the index as about a
host on the internet, the Jupyter server and its kernels run with the suite's network
guard, tests/support/guard_network, on PYTHONPATH, given LILY_TEST_PUBLIC_NAMES: the two
names resolve to global addresses, and a connection to those is routed to the index's
loopback port. Name resolution and
routing are simulated; the policy, the question, the proxy's checks and its connections
are Lily's own. Any other connection beyond loopback is refused and logged, and the log
must stay empty.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.browser.conftest import KERNEL_START_MS, GuardedPage, screenshot, write_notebook
from tests.browser.notebook_page import EXECUTED, NotebookPage
from tests.browser.tablekit_index import package_index
from tests.conftest import REPO
from tests.llm.test_python_environments import make_venv
from tests.network.servers import EchoServer, file_server
from tests.support.jupyter_server import JupyterProcess, start_lab
from tests.support.openai_server import OpenAIServer, Reply, tool_call

INDEX_NAME, FILES_NAME = "pypi.org", "files.pythonhosted.org"
# Global addresses (so the proxy's address check passes), routed to loopback: never reached.
ADDRESSES = {INDEX_NAME: "1.2.3.4", FILES_NAME: "1.2.3.5"}
GUARD = REPO / "tests" / "support" / "guard_network"
DATA = "city,population\nLyon,522250\nNantes,320732\nLille,236710\nNice,348085\n"
INSTALL = "install tablekit and show me the first rows of data.csv"
COMMIT = "commit this"
SEND = "send data.csv to my server"
MESSAGE = "Add data.csv and the first look at it"
KEY = "sk-lily-browser-test-4d9f2a71"  # no part of it in a path (the sandbox drops those)
STEP_MS = 240_000  # pip in the sandbox, a kernel starting: a loaded 2-core machine


def _plan(unnamed_port: int) -> dict[str, list[Reply]]:
    """What the model does for each request: its tool calls in turn, then its answer."""
    return {
        INSTALL: [Reply(tool_calls=[tool_call("shell", {"command": "pip install tablekit"})]),
                  Reply(tool_calls=[tool_call("python", {"code": (
                      "import tablekit\ntablekit.read_csv('data.csv').head(3)")})]),
                  Reply(text="Here are the first rows of data.csv.")],
        COMMIT: [Reply(tool_calls=[tool_call("shell", {
                     "command": f"git add -A && git commit -m '{MESSAGE}'"})]),
                 Reply(text="Committed.")],
        SEND: [Reply(tool_calls=[tool_call("shell", {"command": (
                   f"curl -sS -m 20 --data-binary @data.csv "
                   f"http://127.0.0.1:{unnamed_port}/upload")})]),
               Reply(text="Lily's network policy refused that host.")],
    }


def scripted(plan: dict[str, list[Reply]]) -> Any:
    """The model's reply to a request: the next step of the plan for the person's last
    message (how many tool results came since it tells which)."""
    def reply(body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        last = max(i for i, m in enumerate(messages) if m["role"] == "user")
        asked = str(messages[last]["content"])
        steps = next(steps for request, steps in plan.items() if request in asked)
        done = sum(1 for m in messages[last:] if m["role"] == "tool")
        return steps[min(done, len(steps) - 1)]
    return reply


@dataclass
class Scene:
    server: JupyterProcess
    workspace: Path
    index_port: int
    unnamed: EchoServer
    network_log: Path


def _git(workspace: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(workspace), *args], check=True,
                          capture_output=True, text=True).stdout


def _workspace(root: Path) -> Path:
    """data.csv, a git repository with one commit (data.csv not in it yet), the notebook."""
    root.mkdir()
    (root / "lily.yaml").write_text("model: openai/loop\nstream: false\nretries: 0\n"
                                    "python_kernel: ~/.venvs/ds\n"
                                    "tools:\n  allow: [shell, python]\n")
    (root / ".gitignore").write_text(".ipynb_checkpoints/\n")
    _git(root.parent, "init", "-q", "-b", "main", str(root))
    _git(root, "config", "user.name", "Ada Lovelace")
    _git(root, "config", "user.email", "ada@example.org")
    _git(root, "add", "lily.yaml", ".gitignore")
    _git(root, "commit", "-q", "-m", "Start")
    (root / "data.csv").write_text(DATA)
    write_notebook(root / "analysis.ipynb", (("first", ""),))
    return root


@pytest.fixture(scope="module")
def scene(chromium_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    base = tmp_path_factory.mktemp("done-when")
    home = base / "home"
    make_venv(home / ".venvs" / "ds")
    workspace = _workspace(base / "workspace")
    unnamed = EchoServer()
    (base / "index").mkdir()
    with file_server(base / "index") as index_port, OpenAIServer(
            default=scripted(_plan(unnamed.port))) as model:
        package_index(base / "index", f"http://{FILES_NAME}:{index_port}")
        pip = home / ".config" / "pip" / "pip.conf"
        pip.parent.mkdir(parents=True)
        pip.write_text(f"[global]\nindex-url = http://{INDEX_NAME}:{index_port}/simple/\n"
                       f"trusted-host = {INDEX_NAME}:{index_port} {FILES_NAME}:{index_port}\n")
        log = base / "network-beyond-loopback.log"
        names = ",".join(f"{name}={address}>{index_port}" for name, address in ADDRESSES.items())
        server = start_lab(workspace, home, base / "jupyterlab.log", LILY_EVENT_LOG="1",
                           LILY_API_BASE=model.base_url, OPENAI_API_KEY=KEY,
                           PYTHONPATH=f"{GUARD}:{REPO}", LILY_TEST_PUBLIC_NAMES=names,
                           LILY_TEST_NETWORK_LOG=str(log))
        try:
            yield Scene(server, workspace, index_port, unnamed, log)
        finally:
            server.stop()
            unnamed.close()


@pytest.fixture(scope="module")
def page(browser: Browser, scene: Scene) -> Iterator[Page]:
    server = scene.server
    guarded = GuardedPage(browser,
                          f"{server.url}/lab/tree/analysis.ipynb?token={server.token}")
    try:
        yield guarded.page
    finally:
        guarded.close("done-when")


@pytest.fixture(scope="module")
def notebook(page: Page) -> NotebookPage:
    notebook = NotebookPage(page)
    notebook.wait_kernel(KERNEL_START_MS)
    return notebook


def answer_questions(notebook: NotebookPage, cell: Locator, answer: str) -> list[str]:
    """Answer every question the cell asks with `answer` until it is done; the questions."""
    asked: list[str] = []
    question = cell.locator(".jp-Stdin-input")
    done = cell.locator(".jp-InputPrompt").filter(has_text=EXECUTED)
    while True:
        expect(question.or_(done).first).to_be_visible(timeout=STEP_MS)
        if not question.count():
            notebook.wait_idle(STEP_MS)
            return asked
        asked.append(cell.locator(".jp-Stdin-prompt").inner_text())
        question.fill(answer)
        question.press("Enter")
        expect(question).to_have_count(0)


def _network_events(scene: Scene) -> list[dict[str, Any]]:
    [log] = (scene.workspace / ".lily" / "sessions").glob("*.jsonl")
    events = [json.loads(line) for line in log.read_text().splitlines()]
    return [e["data"] for e in events if e["event"] == "network"]


def test_install_and_show_asks_once_for_the_index_then_shows_the_table(
        notebook: NotebookPage, scene: Scene) -> None:
    cell = notebook.submit(INSTALL)
    asked = answer_questions(notebook, cell, "a")
    assert len(asked) == 1, asked  # one question, for the index's host and its file host
    assert asked[0].startswith(
        f'Network: "shell" wants to connect to "{INDEX_NAME}" port {scene.index_port}, a '
        f'package index, and to "{FILES_NAME}", where it keeps its files.'), asked
    assert "workspace data" in asked[0] and "[y/N/a]" in asked[0]
    outputs = notebook.outputs(cell)
    expect(outputs.filter(has_text="Allow it? [y/N/a]")).to_have_count(1)
    expect(outputs.filter(has_text="Successfully installed tablekit-1.0")).to_have_count(1)
    table = outputs.locator("table", has=notebook.page.locator("th", has_text="population"))
    expect(table).to_have_count(1)
    expect(table.locator("th")).to_have_text(["city", "population"])
    expect(table.locator("tbody tr")).to_have_count(3)
    expect(table.locator("tbody tr").first.locator("td")).to_have_text(["Lyon", "522250"])
    expect(outputs.last).to_contain_text("Here are the first rows of data.csv.")
    site = scene.workspace / ".lily" / "venv" / "lib"
    assert list(site.glob("python*/site-packages/tablekit/__init__.py"))
    person = scene.workspace.parent / "home" / ".venvs" / "ds"
    assert not list(person.glob("lib/python*/site-packages/tablekit"))  # theirs untouched
    reached = {(e["host"], e["allowed"], e["decided_by"]) for e in _network_events(scene)}
    assert reached == {(INDEX_NAME, True, "person"), (FILES_NAME, True, "session")}, reached
    table.scroll_into_view_if_needed()
    screenshot(notebook.page, "done-when-table")


def test_commit_this_commits(notebook: NotebookPage, scene: Scene) -> None:
    cell = notebook.submit(COMMIT)
    assert answer_questions(notebook, cell, "y") == []  # the index, allowed for the session
    outputs = notebook.outputs(cell)
    expect(outputs.filter(has_text=re.compile(rf"\[main [0-9a-f]{{7,}}\] {MESSAGE}"))
           ).to_have_count(1)
    assert _git(scene.workspace, "log", "--format=%s").splitlines() == [MESSAGE, "Start"]
    committed = _git(scene.workspace, "show", "--name-only", "--format=", "HEAD").split()
    assert "data.csv" in committed and "analysis.ipynb" in committed, committed
    assert not any(name.startswith(".lily") for name in committed), committed


def test_a_host_nobody_allowed_is_refused_in_one_line_and_reached_never(
        notebook: NotebookPage, scene: Scene) -> None:
    cell = notebook.submit(SEND)
    assert answer_questions(notebook, cell, "y") == []  # an address nobody named: no question
    line = ("Network: blocked by Lily's network policy: 127.0.0.1 (a loopback address: "
            "refused unless network.allow names it exactly, with its port)")
    expect(notebook.outputs(cell).filter(has_text=line)).to_have_count(1)
    cell.scroll_into_view_if_needed()
    screenshot(notebook.page, "done-when-refused")
    assert scene.unnamed.peers == [] and scene.unnamed.received == b""
    assert [(e["host"], e["port"], e["allowed"], e["decided_by"]) for e in _network_events(
        scene) if e["port"] == scene.unnamed.port] == [
        ("127.0.0.1", scene.unnamed.port, False, "refused-address")]
    # Nothing tried a host beyond loopback other than the index's (by its name).
    assert not scene.network_log.exists(), scene.network_log.read_text()
