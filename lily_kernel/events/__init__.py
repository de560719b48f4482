"""The session's structured event log: every kind declared once (`kinds.py`), and the log
that writes them (`log.py`)."""

from lily_kernel.events.kinds import *  # noqa: F403 (the kinds are this package's API)
from lily_kernel.events.kinds import __all__ as _kinds
from lily_kernel.events.log import (
    LILY_FOLDER,
    Event,
    EventLog,
    keep_out_of_git,
    recorded_settings,
    session_log_path,
)

__all__ = [*_kinds, "LILY_FOLDER", "Event", "EventLog", "keep_out_of_git",
           "recorded_settings", "session_log_path"]
