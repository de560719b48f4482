"""What a rendered `/skills` output must show, in JupyterLab and Notebook 7 alike."""

from __future__ import annotations

import re

from playwright.sync_api import Locator, expect

from tests.browser.conftest import WORKSPACE_ECHO
from tests.browser.notebook_page import STEP_MS

__all__ = ["expect_skills_rendered"]


def expect_skills_rendered(output: Locator) -> None:
    """The table (workspace echo over the bundled one), then a collapsed Excluded section
    that opens to the reasons."""
    expect(output).to_have_attribute("data-mime-type", "text/html", timeout=STEP_MS)
    table = output.locator(".lily-result > table")
    expect(table.locator("thead th")).to_have_text(
        ["name", "summary", "source", "mode", "alias"])
    names = table.locator("tbody tr td:first-child")
    expect(names).to_have_text(["echo", "plan-compiler", "workspace-files"])
    echo = table.locator("tbody tr").nth(0).locator("td")
    expect(echo).to_have_text(["echo", WORKSPACE_ECHO, "workspace", "prompt_rewrite", ""])
    expect(table.locator("tbody tr").nth(1).locator("td").nth(2)).to_have_text("bundled")

    details = output.locator("details")
    expect(details).to_have_count(1)
    expect(details.locator("summary")).to_have_text("Excluded (2)")
    expect(details).not_to_have_attribute("open", "")
    reasons = details.locator("tbody tr")
    expect(reasons.first).to_be_hidden()  # collapsed: nothing of it shows yet
    details.locator("summary").click()
    expect(details).to_have_attribute("open", "")
    broken = reasons.filter(has_text="broken")
    expect(broken).to_be_visible()
    expect(broken.locator("td")).to_have_text(
        ["broken", "malformed", "workspace", re.compile(r"^invalid YAML frontmatter at line 3")])
    shadowed = reasons.filter(has_text="shadowed")
    expect(shadowed.locator("td").nth(0)).to_have_text("echo")
    expect(shadowed.locator("td").nth(2)).to_have_text("bundled")
    expect(shadowed.locator("td").nth(3)).to_contain_text("shadowed by the workspace skill")
