"""What Lily shows as HTML is inert: hostile answers and hostile run outputs, judged by
parsing what Lily made (a browser would see the same tags and attributes).

JupyterLab renders the HTML (and the Markdown) of outputs made in this session without
its sanitizer; these are the vectors an attacker who writes a model's answer, a record
or a run's display would try. The browser test (tests/browser/test_hostile_output.py)
shows the same in JupyterLab itself.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest

from lily_kernel.display import Reply, RunOutput, bundle
from lily_kernel.display.markup import (
    IGNORE_MATH,
    MARKDOWN_LIMIT,
    PROCESS_MATH,
    WRAPPERS,
    markdown_html,
)
from lily_kernel.display.runs import output_message
from lily_kernel.kernel.output import redacted
from lily_kernel.redaction import Redactor

HOSTILE = [
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "<svg onload=alert(1)>",
    "<svg><script>alert(1)</script></svg>",
    '<a href="javascript:alert(1)">x</a>',
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](java&#115;cript:alert(1))",
    "[x](&#x6A;avascript:alert(1))",
    "<javascript:alert(1)>",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "<iframe src=https://evil.example/></iframe>",
    '<object data="https://evil.example/x"></object><embed src="https://evil.example/y">',
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "<style>@import url(https://evil.example/s.css)</style>",
    '<div style="background:url(https://evil.example/bg.png)">x</div>',
    "![x](https://evil.example/p.png)",
    "![x][r]\n\n[r]: https://evil.example/q.png",
    "![x](//evil.example/p.png)",
    '<img srcset="https://evil.example/s.png 1x">',
    '<video poster="https://evil.example/v.png" src="https://evil.example/v.mp4"></video>',
    '<link rel="stylesheet" href="https://evil.example/l.css">',
    '<meta http-equiv="refresh" content="0;url=https://evil.example/">',
    '<base href="https://evil.example/">',
    '<form action="https://evil.example/"><input name=q><button>go</button></form>',
    "<details open ontoggle=alert(1)>x</details>",
    '<a href="https://ok.example/">![i](https://evil.example/i.png)</a>',
    "[files](/files/secret.txt) [api](/api/contents) [rel](notes.ipynb)",
    '<img src="/api/contents?x=1"><img src="files/x.png">',
    "```\n</code></pre><img src=x onerror=alert(1)>\n```",
    "`<img src=x onerror=alert(1)>`",
    "$<img src=x onerror=alert(1)>$ \\(<script>alert(1)</script>\\)",
    "| a | <img src=x onerror=alert(1)> |\n|---|---|\n| ![p](https://evil.example/t.png) | x |",
    # MathJax makes a link of \\href, and a browser drops the tab inside the scheme.
    "$\\href{java\tscript:alert(1)}{x}$ and $$\\href{/api/contents}{y}$$ "
    "\\(\\class{x}{y}\\) $\\require{https://evil.example/x.js}$",
    '<a href="\u00a0https://ok.example/">nbsp</a><a href="java\tscript:alert(1)">tab</a>',
    # Text the redactor masks with no regard for markup (the masks swallow a quote).
    "Here is the summary. ![x password=](data:image/png;base64,AAAA)\" onerror=alert(1) x",
    "![-----BEGIN PRIVATE KEY-----](data:image/png;base64,AAAA) -----END PRIVATE KEY-----\""
    " onerror=alert(1)",
    "![https://u:p](data:image/png;base64,AAAA)@\" onerror=alert(1)",
    "$a password=$ \\(\\href{java\tscript:alert(1)}{x}\\)",
]

# Tags that run code, load a page or a resource, or submit: never in what Lily shows.
_ACTIVE = {"script", "style", "iframe", "frame", "object", "embed", "svg", "math", "video",
           "audio", "source", "track", "link", "meta", "base", "form", "input", "button",
           "textarea", "select", "template", "noscript", "picture", "canvas"}
_URL_ATTRS = {"src", "href", "srcset", "poster", "data", "action", "formaction",
              "background", "cite", "xlink:href"}


class _Elements(HTMLParser):
    """Every element with its attributes, and the text MathJax would typeset: inside an
    element of class mathjax_process, or outside every mathjax_ignore one."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.typeset: list[str] = []
        self._open: list[str] = []  # per open element: "process", "ignore" or ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        self.elements.append((tag, values))
        classes = values.get("class", "").split()
        if tag not in _VOID:
            self._open.append("process" if PROCESS_MATH in classes
                              else "ignore" if IGNORE_MATH in classes else "")

    def handle_endtag(self, tag: str) -> None:
        if self._open and tag not in _VOID:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        marks = [m for m in self._open if m]
        if not marks or marks[-1] == "process":
            self.typeset.append(data)


_VOID = {"img", "br", "hr", "wbr", "col", "input", "meta", "link", "source"}
UNSAFE_TEX = re.compile(r"\\(?:href|url|require|class|cssId|style|data|unicode)")


def inert_problems(html: str) -> list[str]:
    """What in `html` would run, fetch or navigate to a place that is not a plain web
    or mail address; [] when nothing."""
    parser = _Elements()
    parser.feed(html)
    problems = [f"math typeset: {m!r}" for m in parser.typeset if UNSAFE_TEX.search(m)]
    for tag, attrs in parser.elements:
        if tag in _ACTIVE:
            problems.append(f"<{tag}>")
        for name, value in attrs.items():
            if name.startswith("on") or name == "style":
                problems.append(f"<{tag} {name}>")
            elif name == "class" and set(value.split()) - {*WRAPPERS, PROCESS_MATH}:
                problems.append(f"<{tag} class={value!r}>")
            elif name in _URL_ATTRS:
                url = value.strip()
                if tag == "img" and name == "src":
                    if not url.startswith("data:image/"):
                        problems.append(f"<img src={url!r}>")
                elif tag == "a" and name == "href":
                    parts = urlsplit(value)  # as written: a browser drops tabs, not us
                    if parts.scheme not in ("http", "https", "mailto") or (
                            parts.scheme != "mailto" and not parts.netloc) or \
                            not value.isprintable() or value != value.lstrip():
                        problems.append(f"<a href={value!r}>")
                elif name != "cite":
                    problems.append(f"<{tag} {name}={url!r}>")
    return problems


def test_the_oracle_sees_each_kind_of_problem() -> None:
    """The judge itself: it flags what it must (else every test below passes vacuously)."""
    assert inert_problems('<img src="https://e.example/x"><b onclick="x">') == [
        "<img src='https://e.example/x'>", "<b onclick>"]
    assert inert_problems('<a href="javascript:x">a</a><a href="/api">b</a><script>') == [
        "<a href='javascript:x'>", "<a href='/api'>", "<script>"]
    assert inert_problems('<p>ok <a href="https://e.example/">x</a></p>') == []


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_answer_renders_inert(text: str) -> None:
    data = bundle(Reply(text, footer="model <b>x</b>"))
    assert set(data) == {"text/html", "text/plain"}  # no Markdown for the notebook to render
    assert inert_problems(data["text/html"]) == []
    assert data["text/plain"].startswith(text)
    # As the kernel sends it: every credential masked, then cleaned again if that changed it.
    assert inert_problems(redacted({"data": data}, Redactor([]).data)["data"]["text/html"]) == []


def test_masking_a_secret_in_clean_html_could_make_an_attribute_of_text() -> None:
    """Why the kernel cleans HTML again after redacting it: the attack itself."""
    text = "![x password=](data:image/png;base64,AAAA)\" onerror=alert(1) x"
    html = bundle(Reply(text))["text/html"]
    assert inert_problems(html) == []
    assert "<img onerror>" in inert_problems(Redactor([]).data(html))
    assert inert_problems(redacted({"data": {"text/html": html}},
                                   Redactor([]).data)["data"]["text/html"]) == []


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_html_displayed_by_a_run_is_inert(text: str) -> None:
    kind, content = output_message(RunOutput({
        "output_type": "display_data",
        "data": {"text/html": text, "text/markdown": text, "text/latex": text,
                 "application/javascript": "alert(1)", "text/plain": "shown"},
    }))
    assert kind == "display_data"
    assert set(content["data"]) == {"text/html", "text/plain"}
    assert inert_problems(content["data"]["text/html"]) == []


def test_raw_html_in_an_answer_shows_as_the_text_it_is() -> None:
    html = markdown_html("Here is the summary. <img src=x onerror=alert(1)>")
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_markdown_renders_and_math_is_kept_for_mathjax() -> None:
    html = markdown_html("**bold** and `code`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
                         "$a*b*c$ and \\(x_1\\)\n\n$$\nx<y\n$$")
    assert "<strong>bold</strong>" in html and "<code>code</code>" in html
    assert "<table>" in html and "<td>1</td>" in html
    assert '<span class="mathjax_process">\\(a*b*c\\)</span>' in html  # not emphasis
    assert '<span class="mathjax_process">\\(x_1\\)</span>' in html  # not escapes
    assert '<span class="mathjax_process">\\[x&lt;y\\]</span>' in html
    link = markdown_html("$\\href{https://example.com}{x}$")
    assert "mathjax_process" not in link and "\\(\\href{https://example.com}{x}\\)" in link
    assert bundle(Reply("$x$"))["text/html"].startswith(
        '<div class="lily-reply mathjax_ignore">')  # nothing else is typeset


def test_an_image_from_the_web_becomes_a_link_and_one_in_the_answer_shows() -> None:
    remote = markdown_html("![the chart](https://example.com/c.png)")
    assert "<img" not in remote and 'href="https://example.com/c.png"' in remote
    assert "[image: the chart]" in remote
    inline = markdown_html("![dot](data:image/png;base64,iVBORw0KGgo=)")
    assert '<img src="data:image/png;base64,iVBORw0KGgo="' in inline


def test_a_very_long_answer_is_shown_preformatted() -> None:
    text = "<img src=x onerror=alert(1)> *x* " * (MARKDOWN_LIMIT // 30 + 1)
    html = markdown_html(text)
    assert html.startswith("<pre>") and inert_problems(html) == []
    assert "<em>" not in html


def test_svg_from_a_run_is_an_image_and_runs_nothing() -> None:
    svg = '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>x</script></svg>'
    _, content = output_message(RunOutput({"output_type": "display_data",
                                           "data": {"image/svg+xml": svg}}))
    html = content["data"]["text/html"]
    assert html.startswith('<img src="data:image/svg+xml;base64,') and inert_problems(html) == []
