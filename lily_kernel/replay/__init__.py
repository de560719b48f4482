"""Replay: a recorded session's cells run again against the current files, with the
recorded answers of the model, the person and skill scripts (docs/replay.md); and the
session's record, a notebook's turns answered again from it (docs/sessions.md).

`run.py` runs the cells in a scratch copy of the workspace (`scratch.py`), from the log
read and checked (`log.py`), with the recording's stand-ins (`recorded.py`), comparing
each event as it comes (`comparison.py`). The record: a turn's key (`key.py`), the
index of the workspace's recorded turns (`index.py`), the notebook and its saved cells
(`notebook.py`), the one engine replaying a turn (`turn_model.py`), what every record
does (`keeper.py`), the kernel's record (`answers.py`) and `lily replay`'s (`logged.py`).

Names are loaded on first use (PEP 562): the kernel's session imports the record
(answers.py) as it starts, not the rest of replay.
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
