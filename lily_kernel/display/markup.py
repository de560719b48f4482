"""How text from outside Lily becomes HTML for the notebook: the one place.

JupyterLab trusts the outputs of a cell run in the current session and renders their
HTML, Markdown included, without its sanitizer: a `<img onerror>` in a model's answer,
a replayed record or a run's display would run as the person, outside every sandbox.
So Lily sends no Markdown and no HTML it did not make here:

- a model's answer is rendered from Markdown by markdown-it-py (CommonMark, tables,
  strikethrough; raw HTML in it shown as text, math kept for the notebook's MathJax),
  then cleaned by nh3;
- HTML a run displays is cleaned by nh3 with the same rules.

The rules (`clean_html`): ammonia's allowed tags and attributes (no scripts, no event
handlers, no styles, no forms, no frames), and nothing the browser would fetch: an
image's `src` must be a `data:image/…` URL, every other image becomes a link the
person may follow; links go to `http`, `https` or `mailto` only, never a relative path
(the Jupyter server's own API) or `javascript:`.
"""

from __future__ import annotations

import re
from functools import cache
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from markdown_it import MarkdownIt
    from markdown_it.token import Token

__all__ = ["IGNORE_MATH", "MARKDOWN_LIMIT", "PROCESS_MATH", "WRAPPERS", "clean_again",
           "clean_html", "markdown_html"]

MARKDOWN_LIMIT = 200_000
"""Characters of Markdown rendered as Markdown; a longer text is shown as it is
(escaped, preformatted): markdown-it-py takes about 7 s a megabyte on these cores."""

_LINK_SCHEMES = frozenset({"http", "https", "mailto"})
# ammonia's tags less those with no use in an answer (area, map: links by coordinates),
# plus section; the two that carry a URL (a, img) are checked by `_attribute`.
_TAGS = frozenset({
    "a", "abbr", "b", "bdi", "bdo", "blockquote", "br", "caption", "cite", "code", "col",
    "colgroup", "dd", "del", "details", "dfn", "div", "dl", "dt", "em", "figcaption",
    "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li",
    "mark", "ol", "p", "pre", "q", "rp", "rt", "ruby", "s", "samp", "section", "small",
    "span", "strike", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot",
    "th", "thead", "time", "tr", "tt", "u", "ul", "var", "wbr",
})
_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title", "width", "height"},
    "td": {"colspan", "rowspan", "align"},
    "th": {"colspan", "rowspan", "align", "scope"},
    "ol": {"start"},
}


def _data_image(url: str) -> bool:
    return url[:11].lower() == "data:image/" and ";base64," in url[:64].lower()


# A link's scheme, as written (no space, control or other character before it: a
# browser drops a tab inside "java\tscript:", and reads " https:" as a relative path).
_LINK_START = re.compile(r"(?:https?://[^/?#\s]|mailto:)", re.IGNORECASE)


def _link(url: str) -> bool:
    return _LINK_START.match(url) is not None and url.isprintable()


def _attribute(tag: str, name: str, value: str) -> str | None:
    """nh3's filter: keep a URL only where it fetches nothing and leaves no trace."""
    if tag == "img" and name == "src":
        return value if _data_image(value) else None
    if tag == "a" and name == "href":
        return value if _link(value) else None
    return value


IGNORE_MATH = "mathjax_ignore"
"""The class of every element Lily shows HTML in: the notebook's MathJax typesets no
text inside it (MathJax would make links of `\\href{…}` in any text), but the math Lily
vetted (`PROCESS_MATH`)."""
PROCESS_MATH = "mathjax_process"
WRAPPERS = frozenset({"lily-reply", "lily-notice", "lily-result", IGNORE_MATH})


def _clean(html: str, classes: dict[str, set[str]]) -> str:
    import nh3  # with the first output that needs it, never at the kernel's start

    return nh3.clean(html, tags=set(_TAGS), attributes=_ATTRIBUTES,
                     attribute_filter=_attribute, url_schemes={*_LINK_SCHEMES, "data"},
                     link_rel="noopener noreferrer nofollow", allowed_classes=classes)


def clean_html(html: str) -> str:
    """`html` a run displayed, as the notebook may show it: nothing runs, nothing is
    fetched, no class kept, and no math typeset in it."""
    return f'<div class="{IGNORE_MATH}">{_clean(html, {})}</div>'


def clean_again(html: str) -> str:
    """Lily's own HTML after something changed it as text (the redactor masks a secret
    with no regard for markup: a mask may swallow an attribute's closing quote): cleaned
    again, keeping only the classes of Lily's wrappers, so no math is typeset in it."""
    return _clean(html, {"div": set(WRAPPERS)})


# --- Markdown ----------------------------------------------------------------------

# TeX commands that make links, load code or set classes, styles and ids: math holding
# one (or a control character but the line break) is shown as text, never typeset.
_UNSAFE_TEX = re.compile(r"\\(?:href|url|require|class|cssId|style|data|unicode|html)"
                         r"|[\x00-\x09\x0b-\x1f\x7f]")  # a line break is math's own


# --- Markdown ----------------------------------------------------------------------


def _math(_renderer: Any, tokens: Sequence[Token], idx: int, *_: Any) -> str:
    """Math as the notebook's MathJax reads it, escaped, in the one element it typesets
    (`PROCESS_MATH`): inline `\\(…\\)`, display `\\[…\\]`, whatever delimiters the model
    wrote. Math with a command that links or styles (`_UNSAFE_TEX`) is shown as text."""
    token = tokens[idx]
    inline = token.type in ("math_inline", "math_single")
    content = token.content if inline else token.content.strip()
    math = f"\\({escape(content)}\\)" if inline else f"\\[{escape(content)}\\]"
    if _UNSAFE_TEX.search(content) is None:
        math = f'<span class="{PROCESS_MATH}">{math}</span>'
    return math if inline else f"<p>{math}</p>\n"


def _image(_renderer: Any, tokens: Sequence[Token], idx: int, *_: Any) -> str:
    """An image inline only when its bytes are in the answer (a `data:` URL); any other
    is a link to it, named by its alt text: the browser fetches nothing it is not asked."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = escape("".join(child.content for child in token.children or ()))
    if _data_image(src):
        return f'<img src="{escape(src)}" alt="{alt}">'
    return f'<a href="{escape(src)}">[image: {alt or "untitled"}]</a>'


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin
    from mdit_py_plugins.texmath import texmath_plugin

    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    dollarmath_plugin(md, double_inline=True)
    texmath_plugin(md, delimiters="brackets")
    for rule in ("math_inline", "math_inline_double", "math_single", "math_block",
                 "math_block_eqno", "math_block_label"):
        md.add_render_rule(rule, _math)
    md.add_render_rule("image", _image)
    return md


def markdown_html(markdown: str) -> str:
    """A model's Markdown as clean HTML. Raw HTML in it shows as the text it is; past
    MARKDOWN_LIMIT characters, the whole text is shown preformatted."""
    if len(markdown) > MARKDOWN_LIMIT:
        return f"<pre>{escape(markdown)}</pre>"
    # Raw HTML was escaped by the parser: the only classes are the math spans it made.
    return _clean(_parser().render(markdown), {"span": {PROCESS_MATH}})
