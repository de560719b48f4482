"""Drive one open notebook in JupyterLab or Notebook 7 (they share the notebook widget).

Every wait is explicit and bounded: on the kernel's execution indicator, on a cell's
execution count, on an element; never a sleep.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from playwright.sync_api import Locator, Page, expect

__all__ = ["STEP_MS", "NotebookPage", "Streaming"]

STEP_MS = 60_000  # one step on a loaded 2-core machine; generous, still bounded
EXECUTED = re.compile(r"\[\d+\]:")


@dataclass(frozen=True)
class Streaming:
    """A cell seen mid-answer: its number of outputs and the answer's text so far."""

    count: int
    text: str


class NotebookPage:
    """The notebook panel visible in `page`."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")

    @property
    def cells(self) -> Locator:
        return self.panel.locator(".jp-Notebook .jp-Cell")

    @property
    def indicator(self) -> Locator:
        return self.panel.locator(".jp-Notebook-ExecutionIndicator")

    def wait_idle(self, timeout: float = STEP_MS) -> None:
        expect(self.indicator).to_have_attribute("data-status", "idle", timeout=timeout)

    def wait_kernel(self, timeout: float = STEP_MS) -> None:
        """Wait until the notebook's kernel is Lily and idle. On a loaded machine
        JupyterLab may open the notebook before its kernelspecs and ask which kernel to
        start: the kernel it offers is the notebook's own, Lily, and is accepted."""
        ready = self.page.get_by_text(re.compile(r"^Lily \| Idle$"))
        dialog = self.page.locator(".jp-Dialog", has_text="Select Kernel")
        expect(ready.or_(dialog).first).to_be_visible(timeout=timeout)
        if dialog.is_visible():
            expect(dialog.locator("select")).to_have_value(re.compile("lily"))
            dialog.locator(".jp-Dialog-button.jp-mod-accept").click()
        expect(ready).to_be_visible(timeout=timeout)
        self.wait_idle(timeout)

    def edit_last_cell(self, text: str = "") -> Locator:
        """Focus the last cell's editor, replace its text by typing `text`; return the cell
        (pinned by position: running it adds a cell, which `.last` would follow)."""
        expect(self.cells.last).to_be_visible(timeout=STEP_MS)
        cell = self.cells.nth(self.cells.count() - 1)
        editor = cell.locator(".cm-content")
        editor.click(timeout=STEP_MS)
        self.page.keyboard.press("ControlOrMeta+a")
        self.page.keyboard.press("Delete")
        if text:
            self.page.keyboard.type(text)
        expect(editor).to_have_text(text, timeout=STEP_MS)
        return cell

    def submit(self, text: str) -> Locator:
        """Type `text` into the last cell and run it (Shift+Enter); don't wait for it."""
        cell = self.edit_last_cell(text)
        self.page.keyboard.press("Shift+Enter")
        return cell

    def wait_done(self, cell: Locator, timeout: float = STEP_MS) -> Locator:
        """Wait until `cell` has its execution count and the kernel is idle again."""
        expect(cell.locator(".jp-InputPrompt")).to_have_text(EXECUTED, timeout=timeout)
        self.wait_idle(timeout)
        return cell

    def run(self, text: str, timeout: float = STEP_MS) -> Locator:
        return self.wait_done(self.submit(text), timeout)

    @staticmethod
    def outputs(cell: Locator) -> Locator:
        return cell.locator(".jp-OutputArea-output")

    def wait_streaming(self, cell: Locator, timeout: float = STEP_MS) -> Streaming:
        """Wait until `cell` is still running (`[*]:`) yet already shows part of a Markdown
        answer; return how many outputs it had then and the answer so far."""
        handle = cell.element_handle(timeout=timeout)
        result = self.page.wait_for_function(_STREAMING_JS, arg=handle, timeout=timeout)
        value = result.json_value()
        return Streaming(int(value["count"]), str(value["text"]))

    def stop(self) -> None:
        """Press the toolbar's stop button (interrupt the kernel)."""
        self.panel.locator('.jp-Toolbar-item[data-jp-item-name="interrupt"] jp-button').click()


_STREAMING_JS = """cell => {
  const prompt = cell.querySelector('.jp-InputPrompt').textContent.trim();
  const answers = cell.querySelectorAll(
    '.jp-OutputArea-output[data-mime-type="text/html"] .lily-reply');
  const text = answers.length ? answers[answers.length - 1].innerText.trim() : '';
  if (prompt !== '[*]:' || !text) return false;
  return {count: cell.querySelectorAll('.jp-OutputArea-output').length, text};
}"""
