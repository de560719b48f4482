"""What the person sees, as values, and its one rendering to HTML, Markdown and plain text
(`prompting/` is the same for what the model reads)."""

from lily_kernel.display.blocks import (
    Block,
    Details,
    Document,
    Fields,
    Notice,
    Preformatted,
    Reply,
    Table,
    Text,
)
from lily_kernel.display.render import Shown, bundle, render_html, render_markdown, render_plain
from lily_kernel.display.runs import Code, RunOutput
from lily_kernel.display.told import Told

__all__ = [
    "Block",
    "Code",
    "Details",
    "Document",
    "Fields",
    "Notice",
    "Preformatted",
    "Reply",
    "RunOutput",
    "Shown",
    "Table",
    "Text",
    "Told",
    "bundle",
    "render_html",
    "render_markdown",
    "render_plain",
]
