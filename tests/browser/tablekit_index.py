"""A package index the test builds: `tablekit`, a small pure-Python package that reads a
CSV file into a table that shows itself as HTML (`_repr_html_`), as a wheel a build
backend would make, served from a PEP 503 simple index folder."""

from __future__ import annotations

from pathlib import Path

from tests.support.wheels import build_wheel, link_wheel

__all__ = ["package_index"]

_SOURCE = '''"""tablekit: read a CSV file, show its first rows."""

import csv
import html


class Table:
    def __init__(self, header, rows):
        self.header, self.rows = header, rows

    def head(self, count=5):
        return Table(self.header, self.rows[:count])

    def _repr_html_(self):
        head = _cells("th", self.header)
        body = "".join("<tr>" + _cells("td", row) + "</tr>" for row in self.rows)
        return (f'<table class="tablekit"><thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table>")


def _cells(tag, row):
    return "".join(f"<{tag}>{html.escape(value)}</{tag}>" for value in row)


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as handle:
        header, *rows = csv.reader(handle)
    return Table(header, rows)
'''


def package_index(folder: Path, files_url: str = "") -> Path:
    """`folder` as a simple index: `simple/tablekit/` links the wheel, with its sha256,
    at `files_url` (another host, as PyPI's index links files.pythonhosted.org), or on
    the index's own host."""
    wheel = build_wheel(folder / "files", "tablekit", source=_SOURCE.encode())
    link_wheel(folder, "tablekit", wheel, files_url)
    return folder
