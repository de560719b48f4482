"""Render what the person is shown (display/blocks.py) as HTML, Markdown and plain text,
and as the MIME bundles front ends pick from. The one place Lily's output is formatted:
everything from files is escaped here (HTML entities, Markdown specials, and for plain
text the escapes of lily_kernel/visible.py, so a terminal reads no escape code).
"""

from __future__ import annotations

import contextlib
import re
import weakref
from collections.abc import Callable
from html import escape
from typing import Any

from lily_kernel.display.blocks import (
    Block,
    Document,
    Fields,
    Notice,
    Preformatted,
    Reply,
    Table,
    Text,
)
from lily_kernel.display.runs import Code, RunOutput, code_bundle
from lily_kernel.visible import visible, visible_prose

__all__ = ["Shown", "bundle", "render_html", "render_markdown", "render_plain"]

Shown = Document | Notice | Reply | Code | RunOutput
"""What a cell shows the person, each a value the front end renders: a command's result
(a Document), a notice, the model's finished answer, code that runs and each output of
it (display/runs.py: a run's output becomes a message of its own, not a bundle)."""

# Markdown-inert text: HTML characters as entities, Markdown specials backslash-escaped.
# One translate pass (a regex substitution per cell cost 8 ms for 1,000 skills).
_MD_ESCAPES = str.maketrans(
    {"&": "&amp;", "<": "&lt;", ">": "&gt;"} | {c: "\\" + c for c in "\\`*_{}[]()#+!|~"}
)


def _md(text: str) -> str:
    return text.translate(_MD_ESCAPES)


# Spans in backticks are code (a command, a key, a path), in Lily's words as in a skill's
# summary: <code> in HTML, a code span in Markdown; plain text keeps the backticks.
_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def _spans(text: str, outside: Callable[[str], str], code: Callable[[str], str]) -> str:
    if "`" not in text:  # (most cells: one pass, no regex)
        return outside(text)
    parts, last = [], 0
    for match in _CODE_SPAN.finditer(text):
        parts += [outside(text[last:match.start()]), code(match.group(1))]
        last = match.end()
    parts.append(outside(text[last:]))
    return "".join(parts)


def _html_text(text: str) -> str:
    """Text escaped, its `code` spans as <code>."""
    return _spans(text, escape, lambda c: f"<code>{escape(c)}</code>")


def _md_text(text: str, in_table: bool = False) -> str:
    """Text made Markdown-inert, its `code` spans kept as code spans (a `|` in a table's
    escaped: a table row ends at a bare one, even in a code span)."""
    return _spans(text, _md, lambda c: "`" + (c.replace("|", "\\|") if in_table else c) + "`")


def _md_fence(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


# --- HTML --------------------------------------------------------------------------


def _html_block(block: Block) -> str:
    if isinstance(block, Text):
        return f"<p>{_html_text(block.text)}</p>"
    if isinstance(block, Preformatted):
        return f"<pre>{escape(block.text)}</pre>"
    if isinstance(block, Fields):
        rows = "".join(
            f"<tr><th style=\"text-align:left\">{escape(k)}</th><td style=\"text-align:left\">"
            f"{_html_text(v)}</td></tr>"
            for k, v in block.items
        )
        return f"<table>{rows}</table>"
    if isinstance(block, Table):
        head = "".join(f"<th style=\"text-align:left\">{escape(h)}</th>" for h in block.headers)
        body = "".join(
            "<tr>" + "".join(f"<td style=\"text-align:left\">{_html_text(c)}</td>" for c in row)
            + "</tr>"
            for row in block.rows
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    inner = "".join(_html_block(b) for b in block.blocks)
    return f"<details><summary>{escape(block.summary)}</summary>{inner}</details>"


def render_html(result: Document) -> str:
    parts = ['<div class="lily-result mathjax_ignore">']  # no TeX typeset: display/markup.py
    if result.title:
        parts.append(f"<h4>{escape(result.title)}</h4>")
    parts.extend(_html_block(b) for b in result.blocks)
    parts.extend(f"<p><em>{escape(n)}</em></p>" for n in result.notices)
    parts.append("</div>")
    return "".join(parts)


# --- Markdown ----------------------------------------------------------------------


def _md_cell(text: str) -> str:
    return _md_text(" ".join(text.split()), in_table=True) or " "


def _md_block(block: Block) -> str:
    if isinstance(block, Text):
        return _md_text(block.text)
    if isinstance(block, Preformatted):
        return _md_fence(block.text)
    if isinstance(block, Fields):
        return "\n".join(f"- **{_md(k)}**: {_md_cell(v)}" for k, v in block.items)
    if isinstance(block, Table):
        head = "| " + " | ".join(_md_cell(h) for h in block.headers) + " |"
        rule = "|" + "---|" * len(block.headers)
        rows = ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in block.rows]
        return "\n".join([head, rule, *rows])
    inner = "\n\n".join(_md_block(b) for b in block.blocks)
    return f"**{_md(block.summary)}**\n\n{inner}"


def render_markdown(result: Document) -> str:
    parts = [f"#### {_md(result.title)}"] if result.title else []
    parts.extend(_md_block(b) for b in result.blocks)
    parts.extend(f"*{_md(n)}*" for n in result.notices)
    return "\n\n".join(parts)


# --- Plain text --------------------------------------------------------------------


MIN_COLUMN = 8  # a column is never cut narrower than this (or its header)


def _fit(widths: list[int], floors: list[int], width: int) -> list[int]:
    """Column widths that fit `width` (with 2-space gaps): the widest column gives way
    first, never below its floor. May still exceed `width` when every column is at it."""
    widths = list(widths)
    while (excess := sum(widths) + 2 * (len(widths) - 1) - width) > 0:
        shrinkable = [i for i, w in enumerate(widths) if w > floors[i]]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda i: widths[i])
        others = [widths[i] for i in shrinkable if i != widest]
        # Down to the next widest column (or as far as needed), then share the rest.
        target = max(floors[widest], widths[widest] - excess, max(others, default=0))
        widths[widest] = target if target < widths[widest] else widths[widest] - 1
    return widths


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _plain_table(headers: tuple[str, ...], rows: tuple[tuple[str, ...], ...],
                 width: int | None = None) -> str:
    cells = [[visible(" ".join(c.split())) for c in row] for row in (headers, *rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    if width is not None:
        floors = [min(w, max(MIN_COLUMN, len(h))) for w, h in zip(widths, headers, strict=True)]
        widths = _fit(widths, floors, width)
        cells = [[_cut(c, w) for c, w in zip(row, widths, strict=True)] for row in cells]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _plain_block(block: Block, width: int | None = None) -> str:
    if isinstance(block, Text | Preformatted):
        return visible(block.text, lines=True)
    if isinstance(block, Fields):
        items = [(visible(k), visible(v, lines=True)) for k, v in block.items]
        keys = max((len(k) for k, _ in items), default=0)
        return "\n".join(f"{k.ljust(keys)}  {v}" for k, v in items)
    if isinstance(block, Table):
        return _plain_table(block.headers, block.rows, width)
    inner = "\n\n".join(_plain_block(b, width) for b in block.blocks)
    return f"{visible(block.summary)}\n\n{inner}"


def render_plain(result: Document, width: int | None = None) -> str:
    """Plain text; with `width` (a terminal's), tables are cut to fit it, long cells
    ending in an ellipsis. Without it, everything is whole (notebooks, consoles). What
    came from files shows its invisible characters as escapes: a terminal or a console
    front end reads no escape code from a skill's name."""
    kept, kept_text = _last_plain
    if width is None and kept() is result:
        return kept_text
    parts = [visible(result.title)] if result.title else []
    parts.extend(_plain_block(b, width) for b in result.blocks)
    parts.extend(visible(n, lines=True) for n in result.notices)
    text = "\n\n".join(parts)
    if width is None:
        _keep_plain(result, text)
    return text


def _no_result() -> None:
    return None


# The last frozen result rendered whole, while it lives: a command's result is rendered
# for the digest its event logs (runtime/command_flow.py), then for the bundle shown
# (1,000 skills' table: ~13 ms each); a frozen value renders the same every time.
_last_plain: tuple[Callable[[], Any], str] = (_no_result, "")


def _keep_plain(result: Document, text: str) -> None:
    global _last_plain
    if not getattr(getattr(result, "__dataclass_params__", None), "frozen", False):
        return

    def forget(ref: weakref.ref[Document]) -> None:
        global _last_plain
        if _last_plain[0] is ref:
            _last_plain = (_no_result, "")

    with contextlib.suppress(TypeError):  # a value without weak references is not kept
        _last_plain = (weakref.ref(result, forget), text)


# --- notices and replies ---------------------------------------------------------

def _reply_bundle(reply: Reply) -> dict[str, str]:
    """A model's answer: its Markdown rendered here and cleaned (display/markup.py; the
    notebook would render raw Markdown's HTML unsanitized), the same text for consoles;
    the footer as a small line under it."""
    from lily_kernel.display.markup import IGNORE_MATH, markdown_html  # with the first answer

    html = f'<div class="lily-reply {IGNORE_MATH}">{markdown_html(reply.markdown)}'
    if reply.footer is None:
        return {"text/html": f"{html}</div>", "text/plain": visible_prose(reply.markdown)}
    return {
        "text/html": f"{html}<p><sub>{escape(reply.footer)}</sub></p></div>",
        "text/plain": visible_prose(f"{reply.markdown}\n\n-- {reply.footer}"),
    }


def bundle(value: Document | Notice | Reply | Code) -> dict[str, str]:
    """`{mimetype: text}` for a value: HTML for notebooks, Markdown, plain text for
    consoles (a notice and a reply: HTML and plain; code: Markdown and plain)."""
    if isinstance(value, Code):
        return code_bundle(value)
    if isinstance(value, Notice):
        return {"text/html": (f'<div class="lily-notice mathjax_ignore"><em>'
                              f"{_html_text(value.text)}</em></div>"),
                "text/plain": visible(value.text, lines=True)}
    if isinstance(value, Reply):
        return _reply_bundle(value)
    return {"text/html": render_html(value), "text/markdown": render_markdown(value),
            "text/plain": render_plain(value)}
