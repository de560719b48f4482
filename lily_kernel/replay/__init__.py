"""Replay: a recorded session's cells run again against the current files, with the
recorded answers of the model, the person and skill scripts (`lily replay`,
docs/replay.md).

`run.py` runs the cells in a scratch copy of the workspace (`scratch.py`), from the log
read and checked (`log.py`), with the recording's stand-ins (`recorded.py`), comparing
each event as it comes (`comparison.py`); what the session's record decided is fed back
from the log (`logged.py`, on the record's keeper: record/). The session's record
itself, which every chat turn uses, is record/.

Names are loaded on first use (PEP 562): importing the package loads none of it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lily_kernel.errors import ReplayError
    from lily_kernel.replay.comparison import Divergence
    from lily_kernel.replay.log import read_session_log
    from lily_kernel.replay.run import ReplayReport, replay_session

__all__ = ["Divergence", "ReplayError", "ReplayReport", "read_session_log", "replay_session"]

_HOMES = {
    "Divergence": "lily_kernel.replay.comparison",
    "ReplayError": "lily_kernel.errors",
    "ReplayReport": "lily_kernel.replay.run",
    "read_session_log": "lily_kernel.replay.log",
    "replay_session": "lily_kernel.replay.run",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'lily_kernel.replay' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
