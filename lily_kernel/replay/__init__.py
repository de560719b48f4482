"""Replay: a recorded session's cells run again against the current files, with the
recorded answers of the model, the person and skill scripts (docs/replay.md).

`run.py` runs the cells in a scratch copy of the workspace (`scratch.py`), from the log
read and checked (`log.py`), with the recording's stand-ins (`recorded.py`), comparing
each event as it comes (`comparison.py`).
"""

from lily_kernel.errors import ReplayError
from lily_kernel.replay.comparison import Divergence
from lily_kernel.replay.log import read_session_log
from lily_kernel.replay.run import ReplayReport, replay_session

__all__ = ["Divergence", "ReplayError", "ReplayReport", "read_session_log", "replay_session"]
