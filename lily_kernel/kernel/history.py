"""The cells this kernel ran, answering history requests (tail, range, search).

Lily keeps no history across kernels: session number 1 is always this kernel's, so a
`range` request for session 0 (IPython's "current") or 1 is answered and any other is
empty. Search patterns are globs, as in IPython (`*` any text, `?` one character).
"""

from __future__ import annotations

from fnmatch import fnmatchcase

__all__ = ["CURRENT_SESSION", "CellHistory", "HistoryEntry"]

CURRENT_SESSION = 1

HistoryEntry = tuple[int, int, str | tuple[str, str | None]]
"""(session, line, input) or, with output requested, (session, line, (input, None))."""


class CellHistory:
    def __init__(self) -> None:
        self._cells: list[tuple[int, str]] = []  # (execution count, source)

    def add(self, line: int, source: str) -> None:
        self._cells.append((line, source))

    def tail(self, n: int | None) -> list[tuple[int, str]]:
        return self._cells[-n:] if n else list(self._cells)

    def range(self, session: int | None, start: int | None, stop: int | None
              ) -> list[tuple[int, str]]:
        if session not in (None, 0, CURRENT_SESSION):
            return []
        low = start or 0
        return [(line, src) for line, src in self._cells
                if line >= low and (stop is None or line < stop)]

    def search(self, pattern: str | None, n: int | None, unique: bool
               ) -> list[tuple[int, str]]:
        found = [(line, src) for line, src in self._cells if fnmatchcase(src, pattern or "*")]
        if unique:  # keep the latest run of each distinct source
            latest = {src: line for line, src in found}
            found = [(line, src) for line, src in found if latest[src] == line]
        return found[-n:] if n else found

    def reply(self, hist_access_type: str, output: bool, *, session: int | None = None,
              start: int | None = None, stop: int | None = None, n: int | None = None,
              pattern: str | None = None, unique: bool = False) -> dict[str, object]:
        """The content of a history_reply."""
        if hist_access_type == "tail":
            cells = self.tail(n)
        elif hist_access_type == "range":
            cells = self.range(session, start, stop)
        elif hist_access_type == "search":
            cells = self.search(pattern, n, unique)
        else:
            cells = []
        history: list[HistoryEntry] = [
            (CURRENT_SESSION, line, (src, None) if output else src) for line, src in cells
        ]
        return {"status": "ok", "history": history}
