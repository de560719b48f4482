"""Runtime: route a cell to the command layer or the conversation, and log events."""

from lily_kernel.runtime.environment import LilyEnvironment
from lily_kernel.runtime.runtime import CellSink, LilyRuntime

__all__ = ["CellSink", "LilyEnvironment", "LilyRuntime"]
