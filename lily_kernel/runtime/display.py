"""A command result in the three formats every frontend can pick from (for the edges)."""

from __future__ import annotations

from lily_kernel.commands import CommandResult, render_html, render_markdown, render_plain

__all__ = ["CommandResult", "render_result"]


def render_result(result: CommandResult) -> dict[str, str]:
    """`{mimetype: text}`: HTML for notebooks, Markdown, plain text for consoles."""
    return {
        "text/html": render_html(result),
        "text/markdown": render_markdown(result),
        "text/plain": render_plain(result),
    }
