"""Lily in Notebook 7 (same server as JupyterLab): a saved Lily notebook renders `/skills`
the way JupyterLab does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import KERNEL_START_MS, NOTEBOOK7, GuardedPage
from tests.browser.notebook_page import NotebookPage
from tests.browser.skills_view import expect_skills_rendered
from tests.support.jupyter_server import JupyterProcess


@pytest.fixture(scope="module")
def nb7_page(browser: Browser, lab_server: JupyterProcess) -> Iterator[Page]:
    url = f"{lab_server.url}/notebooks/{NOTEBOOK7}?token={lab_server.token}"
    guarded = GuardedPage(browser, url)
    try:
        yield guarded.page
    finally:
        guarded.close("notebook7")


def test_notebook7_renders_skills_like_jupyterlab(nb7_page: Page) -> None:
    notebook = NotebookPage(nb7_page)
    # Notebook 7's toolbar offers to open the notebook in JupyterLab (Lab's: in Notebook)
    expect(notebook.panel.locator('[data-command="jupyter-notebook:open-lab"]')).to_have_text(
        "JupyterLab", timeout=KERNEL_START_MS)
    expect(notebook.panel.locator(".jp-KernelName")).to_have_text("Lily",
                                                                   timeout=KERNEL_START_MS)
    notebook.wait_idle(KERNEL_START_MS)
    cell = notebook.run("/skills")
    outputs = notebook.outputs(cell)
    expect(outputs).to_have_count(1)
    expect_skills_rendered(outputs)
