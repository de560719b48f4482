"""What the person has been told this session: notices said once, not in every cell."""

from __future__ import annotations

from collections.abc import Hashable

__all__ = ["Told"]


class Told:
    """The session's once-only notices (the embedded model answers, the event log is
    off, the trust store is broken, a persona file was cut…), each by its subject: a
    name, or a value such as the persona told about."""

    def __init__(self) -> None:
        self._said: set[Hashable] = set()

    def first(self, subject: Hashable) -> bool:
        """True the first time `subject` comes up (the notice is due), then False."""
        if subject in self._said:
            return False
        self._said.add(subject)
        return True
