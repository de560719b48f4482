"""Lily in JupyterLab, in headless Chromium: launcher, kernel state, commands, completion.

The tests run in file order on one page: the Launcher first, then one notebook made
from the Lily card, whose cells the later tests add to (the answer right below the
`/skills` table makes the screenshot the README shows).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from lily_kernel.display.messages import EMBEDDED_NOTICE
from tests.browser.conftest import (
    CHAT_STEP_MS,
    KERNEL_START_MS,
    WORKSPACE_ECHO,
    GuardedPage,
    screenshot,
)
from tests.browser.notebook_page import NotebookPage
from tests.browser.skills_view import expect_skills_rendered
from tests.conftest import REPO
from tests.support.jupyter_server import JupyterProcess

QUESTION = "In one sentence: what is a Jupyter kernel?"
LONG_QUESTION = "Tell me a very long story about a lily."


def lily_card(page: Page) -> Locator:
    return page.locator('.jp-LauncherCard[data-category="Notebook"][title="Lily"]')


@pytest.fixture(scope="module")
def lab_page(browser: Browser, lab_server: JupyterProcess) -> Iterator[Page]:
    guarded = GuardedPage(browser, f"{lab_server.url}/lab?token={lab_server.token}")
    try:
        yield guarded.page
    finally:
        guarded.close("jupyterlab")


@pytest.fixture(scope="module")
def notebook(lab_page: Page) -> NotebookPage:
    """A notebook made from the Launcher's Lily card, its kernel started and idle."""
    lily_card(lab_page).click(timeout=KERNEL_START_MS)
    notebook = NotebookPage(lab_page)
    notebook.wait_idle(KERNEL_START_MS)
    return notebook


def test_launcher_shows_a_lily_card_with_lilys_logo(lab_page: Page) -> None:
    card = lily_card(lab_page)
    expect(card).to_be_visible(timeout=KERNEL_START_MS)
    expect(card.locator(".jp-LauncherCard-label")).to_have_text("Lily")
    logo = card.locator("img")
    expect(logo).to_have_attribute("src", re.compile(r"/kernelspecs/lily/logo-svg\.svg$"))
    expect(logo).to_have_js_property("complete", True)
    assert logo.evaluate("img => img.naturalWidth") > 0
    served = logo.evaluate("img => fetch(img.src).then(r => r.text())")
    assert served == (REPO / "kernelspec" / "logo-svg.svg").read_text()


def test_a_notebook_from_the_card_shows_lily_and_idle(lab_page: Page,
                                                      notebook: NotebookPage) -> None:
    expect(notebook.panel.locator(".jp-KernelName")).to_have_text("Lily")
    expect(lab_page.locator("#jp-main-statusbar")).to_contain_text("Lily | Idle")
    expect(notebook.indicator).to_have_attribute("data-status", "idle")


def test_skills_renders_a_table_and_a_collapsed_excluded_section(notebook: NotebookPage) -> None:
    cell = notebook.run("/skills")
    outputs = notebook.outputs(cell)
    expect(outputs).to_have_count(1)
    expect(outputs.locator("h4")).to_contain_text(re.compile(r"Skills: 3 available \(snapshot 1"))
    expect_skills_rendered(outputs)


def test_a_chat_cell_is_answered_by_the_embedded_model_streamed_in_place(
        lab_page: Page, notebook: NotebookPage, embedded_model: None) -> None:
    cell = notebook.submit(QUESTION)
    partial = notebook.wait_streaming(cell, CHAT_STEP_MS)  # text while the cell runs
    notebook.wait_done(cell, CHAT_STEP_MS)
    outputs = notebook.outputs(cell)
    expect(outputs).to_have_count(partial.count)  # updated in place, nothing appended
    # told once which model (its `code` spans shown as code)
    expect(outputs.first).to_contain_text(EMBEDDED_NOTICE.replace("`", ""))
    answer = outputs.last
    expect(answer).to_have_attribute("data-mime-type", "text/html")  # rendered by Lily
    expect(answer.locator("sub")).to_contain_text("SmolLM2-135M-Instruct (local)")
    final = answer.inner_text().strip()
    assert final.startswith(partial.text[:20]) and len(final) > len(partial.text), (
        partial, final)
    cell.scroll_into_view_if_needed()
    screenshot(lab_page, "jupyterlab-answer")


def test_tab_completes_sk_to_skills_and_skill(lab_page: Page, notebook: NotebookPage) -> None:
    notebook.edit_last_cell("/sk")
    lab_page.keyboard.press("Tab")
    items = lab_page.locator(".jp-Completer .jp-Completer-item")
    expect(items).to_have_count(2)
    assert sorted(items.evaluate_all("els => els.map(e => e.dataset.value)")) == [
        "/skill", "/skills"]
    lab_page.keyboard.press("Escape")
    expect(lab_page.locator(".jp-Completer")).to_be_hidden()


def test_shift_tab_on_a_skill_name_shows_its_help(lab_page: Page,
                                                  notebook: NotebookPage) -> None:
    notebook.edit_last_cell("/skill echo")
    lab_page.keyboard.press("Shift+Tab")
    tooltip = lab_page.locator(".jp-Tooltip")
    expect(tooltip).to_be_visible()
    expect(tooltip.locator("h4")).to_have_text("Skill echo")
    expect(tooltip).to_contain_text(WORKSPACE_ECHO)
    expect(tooltip.locator("tr").filter(has_text="source").locator("td")).to_have_text(
        "workspace")
    lab_page.keyboard.press("Escape")
    expect(tooltip).to_be_hidden()


def test_an_unknown_command_shows_its_error(notebook: NotebookPage) -> None:
    cell = notebook.run("/nosuch")
    error = notebook.outputs(cell)
    expect(error).to_have_count(1)
    expect(error).to_have_attribute("data-mime-type", "application/vnd.jupyter.stderr")
    expect(error).to_have_text("Error: unknown command /nosuch.")
    # the kernel answered and is ready for the next cell
    after = notebook.run("/help")
    expect(notebook.outputs(after).locator("h4").first).to_be_visible()


def test_the_stop_button_ends_a_long_answer(notebook: NotebookPage,
                                            embedded_model: None) -> None:
    cell = notebook.submit(LONG_QUESTION)
    notebook.wait_streaming(cell, CHAT_STEP_MS)
    notebook.stop()
    notebook.wait_done(cell)
    error = notebook.outputs(cell).and_(
        notebook.page.locator('[data-mime-type="application/vnd.jupyter.stderr"]'))
    expect(error).to_contain_text("KeyboardInterrupt")
    expect(cell.locator("sub")).to_have_count(0)  # stopped mid-answer: no footer came
    expect(notebook.page.locator("#jp-main-statusbar")).to_contain_text("Lily | Idle")
    after = notebook.run("Say hello.", CHAT_STEP_MS)  # the next cell runs, and chats
    expect(notebook.outputs(after).last.locator("sub")).to_contain_text(
        "SmolLM2-135M-Instruct (local)")
