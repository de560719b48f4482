"""display/runs.py: what the person sees of a run's outputs, given hostile bundles (what a
model's code, or a package it imported, could display). Each test says what is dropped
and what is kept; tests/core/test_markup.py judges the HTML as a browser parses it."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from lily_kernel.display import Code, RunOutput
from lily_kernel.display.runs import code_bundle, output_message
from tests.core.test_markup import inert_problems

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256))).decode()


def shown(output: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return output_message(RunOutput(output))


def display(data: dict[str, Any], metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """The content of the display message a `display_data` output becomes."""
    kind, content = shown({"output_type": "display_data", "data": data,
                           "metadata": metadata or {}})
    assert kind == "display_data" and content["transient"] == {}
    return content


# --- HTML ------------------------------------------------------------------------------


def test_script_tags_are_dropped_with_their_code_and_the_text_around_is_kept() -> None:
    html = display({"text/html": "<p>before</p><script>alert('x')</script><p>after</p>"})
    cleaned = html["data"]["text/html"]
    assert "<script" not in cleaned and "alert" not in cleaned
    assert "<p>before</p>" in cleaned and "<p>after</p>" in cleaned
    assert cleaned.startswith('<div class="mathjax_ignore">') and cleaned.endswith("</div>")


@pytest.mark.parametrize("attribute", [
    'onerror="alert(1)"', "onload=alert(1)", 'onclick="steal()"', "onmouseover=x()",
    'style="background:url(https://evil.example/x)"', 'class="jp-Dialog"', 'id="main"'])
def test_event_handlers_styles_and_classes_are_dropped_and_the_element_kept(
        attribute: str) -> None:
    cleaned = display({"text/html": f"<b {attribute}>bold</b>"})["data"]["text/html"]
    assert "<b>bold</b>" in cleaned
    assert attribute.split("=")[0] not in cleaned.removeprefix('<div class="mathjax_ignore">')


@pytest.mark.parametrize("href", [
    "javascript:alert(1)", "JaVaScRiPt:alert(1)", " javascript:alert(1)",
    "java\tscript:alert(1)", "data:text/html;base64,PHNjcmlwdD4=", "vbscript:x",
    "/api/contents", "files/secret.txt", "//evil.example/x"])
def test_a_link_that_is_not_a_web_or_mail_address_loses_its_href(href: str) -> None:
    cleaned = display({"text/html": f'<a href="{href}">click</a>'})["data"]["text/html"]
    assert "href" not in cleaned and ">click</a>" in cleaned
    assert inert_problems(cleaned) == []


def test_a_web_link_is_kept_and_opens_nothing_of_the_notebook() -> None:
    cleaned = display({"text/html": '<a href="https://example.com/a?b=1">docs</a>'}
                      )["data"]["text/html"]
    assert 'href="https://example.com/a?b=1"' in cleaned
    assert 'rel="noopener noreferrer nofollow"' in cleaned


@pytest.mark.parametrize("element", [
    '<iframe src="https://evil.example/"></iframe>', '<img src="https://evil.example/p.png">',
    '<link rel="stylesheet" href="https://evil.example/s.css">',
    '<form action="https://evil.example/"><input name="q"></form>',
    "<style>body{display:none}</style>", '<object data="x.swf"></object>',
    '<meta http-equiv="refresh" content="0;url=https://evil.example/">'])
def test_what_would_fetch_navigate_or_restyle_is_dropped(element: str) -> None:
    cleaned = display({"text/html": f"<p>kept</p>{element}"})["data"]["text/html"]
    assert "<p>kept</p>" in cleaned and "evil.example" not in cleaned
    assert inert_problems(cleaned) == []


def test_an_inline_image_in_html_is_kept() -> None:
    cleaned = display({"text/html": f'<img src="data:image/png;base64,{PNG}" alt="chart">'}
                      )["data"]["text/html"]
    assert f'src="data:image/png;base64,{PNG}"' in cleaned and 'alt="chart"' in cleaned


# --- SVG -------------------------------------------------------------------------------


def test_svg_with_a_script_is_shown_only_as_an_image() -> None:
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)">'
           "<script>alert(2)</script><circle r='5'/></svg>")
    data = display({"image/svg+xml": svg})["data"]
    assert set(data) == {"text/html"}  # no image/svg+xml: the notebook would inline it
    html = data["text/html"]
    assert html.startswith('<img src="data:image/svg+xml;base64,') and "<svg" not in html
    encoded = html.split("base64,")[1].split('"')[0]
    assert base64.b64decode(encoded).decode() == svg  # whole: as an image, nothing runs
    assert inert_problems(html) == []


def test_svg_beside_html_is_dropped_and_the_html_cleaned() -> None:
    data = display({"image/svg+xml": "<svg onload=alert(1)></svg>",
                    "text/html": "<p>table</p><script>x</script>"})["data"]
    assert set(data) == {"text/html"}
    assert "svg" not in data["text/html"] and "<p>table</p>" in data["text/html"]


# --- raster images -----------------------------------------------------------------------


def test_an_image_passes_as_its_checked_base64_with_only_its_size_metadata() -> None:
    content = display(
        {"image/png": PNG[:40] + "\n" + PNG[40:], "text/plain": "<Figure>"},
        {"image/png": {"width": 640, "height": "480", "unconfined": True},
         "text/html": {"isolated": True}, "application/x-widget": {"width": 3}})
    assert content["data"] == {"image/png": PNG, "text/plain": "<Figure>"}  # newlines out
    assert content["metadata"] == {"image/png": {"width": 640}}  # a string is not a size


def test_a_huge_image_is_kept_whole() -> None:
    """The sanitiser judges what an output is, not its size: the run's byte cap bounds
    that before it comes here (execution/)."""
    huge = base64.b64encode(bytes(5_000_000)).decode()
    assert display({"image/jpeg": huge})["data"] == {"image/jpeg": huge}


@pytest.mark.parametrize("payload", [
    "<script>alert(1)</script>", "not base64 at all!", "iVBORw0KGgo=\" onerror=\"alert(1)",
    "data:image/png;base64,iVBORw0KGgo=", "iVBORw0KGgo", ["<svg onload=alert(1)>"]])
def test_image_data_that_is_not_base64_is_dropped(payload: str | list[str]) -> None:
    data = display({"image/png": payload, "image/gif": payload, "text/plain": "a plot"})["data"]
    assert data == {"text/plain": "a plot"}


def test_a_bad_image_alone_is_said_not_shown() -> None:
    data = display({"image/png": "<script>alert(1)</script>"})["data"]
    assert data == {"text/plain": "[an output Lily does not show here: image/png]"}


@pytest.mark.parametrize("mime", ["image/bmp", "image/x-icon", "image/tiff"])
def test_an_image_type_not_listed_is_dropped_however_valid(mime: str) -> None:
    assert display({mime: PNG})["data"] == {
        "text/plain": f"[an output Lily does not show here: {mime}]"}


# --- what a notebook would run or cannot render here --------------------------------------


def test_unknown_and_running_mime_types_are_dropped_for_the_plain_text() -> None:
    data = display({
        "application/javascript": "alert(1)",
        "application/vnd.jupyter.widget-view+json": {"model_id": "abc"},
        "text/markdown": "<img src=x onerror=alert(1)>",
        "text/latex": "$\\href{javascript:alert(1)}{x}$",
        "application/x-evil": "<script>",
        "text/plain": ["line 1\n", "line 2"],
    })["data"]
    assert data == {"text/plain": "line 1\nline 2"}


def test_unknown_mime_types_alone_are_named_in_sorted_order() -> None:
    data = display({"application/x-z": "z", "application/javascript": "alert(1)"})["data"]
    assert data == {"text/plain": "[an output Lily does not show here: "
                                  "application/javascript, application/x-z]"}
    assert display({})["data"] == {"text/plain": "[an output Lily does not show here: nothing]"}


def test_an_execute_result_is_shown_as_a_display() -> None:
    kind, content = shown({"output_type": "execute_result", "execution_count": 3,
                           "data": {"text/plain": "42"}, "metadata": {}})
    assert (kind, content["data"]) == ("display_data", {"text/plain": "42"})


# --- text --------------------------------------------------------------------------------


def test_plain_text_loses_terminal_escapes_and_keeps_its_lines() -> None:
    plain = "\x1b[31mred\x1b[0m\n\x1b]0;title\x07done\r\n\tok\x00"
    data = display({"text/plain": plain})["data"]
    assert data == {"text/plain": "red\ndone\r\n\tok\\x00"}


def test_a_stream_is_stdout_or_stderr_and_shows_no_escape_code() -> None:
    assert shown({"output_type": "stream", "name": "stdout", "text": ["a\x1b[2J", "b\n"]}) == (
        "stream", {"name": "stdout", "text": "ab\n"})
    assert shown({"output_type": "stream", "name": "stderr", "text": "warn\x1b]52;c;eA==\x07"}
                 ) == ("stream", {"name": "stderr", "text": "warn"})
    # Any other name (a front end may act on one it does not know) is stdout.
    assert shown({"output_type": "stream", "name": "<script>", "text": "x"}) == (
        "stream", {"name": "stdout", "text": "x"})


def test_an_error_is_a_short_traceback_on_stderr_without_escapes() -> None:
    kind, content = shown({
        "output_type": "error", "ename": "ValueError", "evalue": "bad",
        "traceback": ["\x1b[0;31mTraceback\x1b[0m", "frame 1", "", "frame 2",
                      "\x1b[0;31mValueError\x1b[0m: bad"]})
    assert (kind, content["name"]) == ("stream", "stderr")
    assert content["text"] == "frame 1\nframe 2\nValueError: bad\n"  # the last entries


# --- the code itself ---------------------------------------------------------------------


def test_code_is_fenced_longer_than_any_fence_in_it_and_loses_escapes() -> None:
    code = "print('```')\n# ````\n\x1b[2Jx = 1"
    data = code_bundle(Code(code))
    assert data == {"text/markdown": "`````python\nprint('```')\n# ````\nx = 1\n`````",
                    "text/plain": "print('```')\n# ````\nx = 1"}
    assert code_bundle(Code("ls -la", "bash"))["text/markdown"] == "```bash\nls -la\n```"
