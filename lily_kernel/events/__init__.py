"""The session's structured event log: every kind declared once (`kinds.py`, and the
record's kinds in `turns.py`), and the log that writes them (`log.py`)."""

from lily_kernel.events.kinds import *  # noqa: F403 (the kinds are this package's API)
from lily_kernel.events.kinds import KINDS
from lily_kernel.events.kinds import __all__ as _kinds
from lily_kernel.events.log import (
    LILY_FOLDER,
    Event,
    EventLog,
    keep_out_of_git,
    recorded_settings,
    session_log_path,
)
from lily_kernel.events.turns import *  # noqa: F403
from lily_kernel.events.turns import __all__ as _turns

EVENT_KINDS: tuple[str, ...] = tuple(KINDS)  # Lily's own kinds, declared in kinds and turns

__all__ = [*_kinds, *_turns, "EVENT_KINDS", "LILY_FOLDER", "Event", "EventLog",
           "keep_out_of_git", "recorded_settings", "session_log_path"]
