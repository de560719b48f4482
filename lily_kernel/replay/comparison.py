"""What replay compares, event by event, and the first difference as a person reads it.

The replay's events are compared with the recorded ones as they come, after dropping
what always differs (times, sequence numbers, durations) and writing the scratch copy's
paths as the recorded workspace's. A divergence is shown in one place, its values as
JSON with nothing a terminal would act on (a log's text may be crafted).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lily_kernel.events import Event
from lily_kernel.replay.log import printable
from lily_kernel.replay.scratch import PathMap

__all__ = ["VOLATILE", "Comparison", "Divergence", "normalise"]

# Fields that differ on every run by nature; never compared: times, and what the network
# answered (a `network` event's address and bytes: a server's answer is its own; whether
# the connection was allowed, and by whom, is compared).
VOLATILE = frozenset({"latency_ms", "duration_ms", "address", "bytes_sent", "bytes_received"})


@dataclass(frozen=True)
class Divergence:
    """The first place the replay differs from the recording."""

    index: int  # position in the event stream, from 1
    event: str
    expected: dict[str, Any] | None  # None: the replay produced more events
    actual: dict[str, Any] | None  # None: the replay stopped short

    def describe(self) -> str:
        event = _name(self.event)
        if self.actual is None:
            return (f"event {self.index} ({event}): expected {_show(self.expected)}, "
                    "but the replay produced no more events")
        if self.expected is None:
            return (f"event {self.index} ({event}): the recording ends here, but the "
                    f"replay produced {_show(self.actual)}")
        keys = sorted(k for k in set(self.expected) | set(self.actual)
                      if self.expected.get(k) != self.actual.get(k))
        if "event" in keys:
            return (f"event {self.index}: expected a '{_name(self.expected['event'])}' event "
                    f"{_show(self.expected)}, the replay produced a "
                    f"'{_name(self.actual['event'])}' event {_show(self.actual)}")
        data_e, data_a = self.expected.get("data", {}), self.actual.get("data", {})
        fields = sorted(k for k in set(data_e) | set(data_a) if data_e.get(k) != data_a.get(k))
        lines = [f"event {self.index} ({event}) differs in {', '.join(map(_name, fields))}:"]
        for name in fields:
            shown = _name(name)
            lines.append(f"  {shown}: expected {_show(data_e.get(name))}")
            lines.append(f"  {' ' * len(shown)}  actual   {_show(data_a.get(name))}")
        return "\n".join(lines)


def _show(value: Any, limit: int = 600) -> str:
    """A value as JSON, shortened, with nothing a terminal would act on (the log's text
    may be crafted)."""
    text = printable(json.dumps(value, ensure_ascii=False, sort_keys=True, default=str))
    return text if len(text) <= limit else text[:limit] + " ..."


def _name(text: object) -> str:
    """An event's kind or a field's name as is, or as JSON when it is anything else."""
    name = str(text)
    return name if re.fullmatch(r"[A-Za-z0-9_.-]+", name) else _show(name, 80)


def normalise(event: Mapping[str, Any]) -> dict[str, Any]:
    """What replay compares: the kind and the data, without the volatile fields; a
    field that is null compares as absent (a log written before a kind had it)."""
    data = {k: v for k, v in event.get("data", {}).items()
            if k not in VOLATILE and v is not None}
    return {"event": event.get("event"), "data": json.loads(json.dumps(data, default=str))}


class Comparison:
    """Compares the replay's events with the recorded ones as they come (the listener
    of the replay's log); at the first difference it keeps the divergence and calls
    `stop`, if set (while a cell runs: it raises where the event was emitted), and
    compares nothing more."""

    def __init__(self, recorded: list[dict[str, Any]], paths: PathMap) -> None:
        self.expected = [normalise(e) for e in recorded]
        self.paths = paths
        self.produced = 0
        self.divergence: Divergence | None = None
        self.stop: Callable[[], object] | None = None
        self._lock = threading.Lock()  # (a tool emits from its worker thread)

    def __call__(self, event: Event) -> None:
        with self._lock:
            if self.divergence is not None:
                return
            got = self.paths.to_recorded(normalise(event.as_dict()))
            index, self.produced = self.produced, self.produced + 1
            want = self.expected[index] if index < len(self.expected) else None
            if want == got:
                return
            self.divergence = Divergence(index + 1, str((want or got)["event"]), want, got)
            stop = self.stop
        if stop is not None:
            stop()

    def finish(self) -> Divergence | None:
        """The divergence, or the recording going on where the replay ended."""
        if self.divergence is None and self.produced < len(self.expected):
            want = self.expected[self.produced]
            self.divergence = Divergence(self.produced + 1, str(want["event"]), want, None)
        return self.divergence
