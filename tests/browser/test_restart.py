"""Lily in JupyterLab, across a restart (headless Chromium, the loopback model answering
with a fresh token each time): Kernel > Restart Kernel and Run All Cells brings the
conversation back from the record, marked as replayed, with no model call; after a
plain restart, a follow-up in a new cell reaches the model with what was said (the
kernel learns its notebook from JPY_SESSION_NAME, the cells from JupyterLab's ids)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import KERNEL_START_MS, GuardedPage, lab_with_model, write_notebook
from tests.browser.notebook_page import STEP_MS, NotebookPage
from tests.support.jupyter_server import JupyterProcess
from tests.support.openai_server import OpenAIServer, fresh_tokens

CELLS = (("ask-1", "What is 2+2?"), ("ask-2", "And 3+3?"))
EXECUTED = re.compile(r"\[\d+\]:")


@pytest.fixture(scope="module")
def model() -> Iterator[OpenAIServer]:
    with OpenAIServer(default=fresh_tokens()) as server:
        yield server


@pytest.fixture(scope="module")
def lab(chromium_ready: None, tmp_path_factory: pytest.TempPathFactory,
        model: OpenAIServer) -> Iterator[tuple[JupyterProcess, Path]]:
    base = tmp_path_factory.mktemp("restart")
    with lab_with_model(base, model.base_url, "model: openai/loop\nstream: false\nretries: 0\n",
                        "sk-restart-not-a-real-key-00") as (server, root):
        write_notebook(root / "talk.ipynb", CELLS)
        yield server, root


@pytest.fixture(scope="module")
def page(browser: Browser, lab: tuple[JupyterProcess, Path]) -> Iterator[Page]:
    server, _ = lab
    guarded = GuardedPage(browser, f"{server.url}/lab/tree/talk.ipynb?token={server.token}")
    try:
        yield guarded.page
    finally:
        guarded.close("restart")


def menu(page: Page, top: str, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{top}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).first.click()


def confirm(page: Page) -> None:
    page.locator(".jp-Dialog-button.jp-mod-accept").click()


def saved(path: Path, text: str) -> None:
    """Wait (bounded) until JupyterLab's save has written `text` into the file."""
    deadline = time.monotonic() + STEP_MS / 1000
    while text not in path.read_text():
        assert time.monotonic() < deadline, f"{path.name} was not saved with {text!r}"
        time.sleep(0.2)  # polling a file another process writes; not synchronisation


def run_all(page: Page, notebook: NotebookPage) -> None:
    """Run > Run All Cells. JupyterLab drops the command when it comes just after the
    kernel's first idle, before its session is ready (the cells stay `[ ]:`; a queued
    cell shows `[*]:` at once): then it is given again, once, which runs nothing twice."""
    first = notebook.cells.first.locator(".jp-InputPrompt")
    for attempt in range(2):
        menu(page, "Run", "Run All Cells")
        try:
            expect(first).not_to_have_text(re.compile(r"^\[ \]:$"), timeout=5_000)
            return
        except AssertionError:
            if attempt:
                raise


def run_every_cell(page: Page, notebook: NotebookPage, cells: int) -> None:
    """Once the kernel is ready, Run All, then wait until each of the `cells` has run
    and the kernel is idle again."""
    notebook.wait_kernel(KERNEL_START_MS)
    run_all(page, notebook)
    for n in range(cells):
        expect(notebook.cells.nth(n).locator(".jp-InputPrompt")).to_have_text(
            EXECUTED, timeout=KERNEL_START_MS)
    notebook.wait_idle()


def users(model: OpenAIServer) -> list[str]:
    return [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "user"]


def test_restart_and_run_all_brings_the_conversation_back(
        page: Page, lab: tuple[JupyterProcess, Path], model: OpenAIServer) -> None:
    _, root = lab
    notebook = NotebookPage(page)
    run_every_cell(page, notebook, len(CELLS))
    answers = [notebook.outputs(notebook.cells.nth(n)).last.inner_text()
               for n in range(len(CELLS))]
    assert all(a.startswith("Answer ") for a in answers) and len(model.requests) == 2
    page.keyboard.press("ControlOrMeta+s")
    saved(root / "talk.ipynb", answers[1].split("\n")[0])

    menu(page, "Kernel", "Restart Kernel and Run All Cells…")
    confirm(page)
    for n in range(len(CELLS)):
        outputs = notebook.outputs(notebook.cells.nth(n))
        expect(outputs.first).to_contain_text("Replayed from the record: the answer "
                                              "openai/loop gave on ", timeout=KERNEL_START_MS)
        expect(outputs.last).to_have_text(answers[n], timeout=STEP_MS)
    notebook.wait_idle()
    assert len(model.requests) == 2  # no model call

    menu(page, "Kernel", "Restart Kernel…")
    confirm(page)
    notebook.wait_idle(KERNEL_START_MS)
    notebook.cells.last.locator(".jp-InputPrompt").click()  # command mode on the last cell
    page.keyboard.press("b")  # a new cell below it
    cell = notebook.run("Which was my first question?", timeout=KERNEL_START_MS)
    expect(notebook.outputs(cell).first).to_contain_text(
        "Continuing this notebook's conversation of ", timeout=STEP_MS)
    assert users(model) == [*(code for _, code in CELLS), "Which was my first question?"]
