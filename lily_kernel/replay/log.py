"""Read a session log for replay: one regular file, bounded, every event checked.

A log is whatever file a person points `lily replay` at, crafted or not: it is refused
before it is opened when it is no regular file (a FIFO would block, `/dev/zero` never
ends), read up to a bound, and each event of a kind Lily declares is checked against
that declaration (`events.py`), field by field, by the one checker of untrusted
mappings (`validation.py`), so that replay never meets a value of the wrong type (a
list for `settings`, "abc" for `context_window`, an outcome no Lily writes). Every
refusal is a ReplayError with one line saying why.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from lily_kernel.errors import ReplayError
from lily_kernel.events import KINDS
from lily_kernel.record.shapes import RecordedResponse
from lily_kernel.validation import ShapeError, build, check_fields

__all__ = ["MAX_LINE_BYTES", "MAX_LOG_BYTES", "MAX_NESTING", "printable", "read_session_log"]

MAX_LOG_BYTES = 256 * 1024 * 1024  # a day of busy sessions is a few MiB
MAX_LINE_BYTES = 16 * 1024 * 1024  # one event: a tool result is at most ~100,000 chars
MAX_NESTING = 100  # lists and objects within each other: replay copies and compares them
_CHUNK = 1024 * 1024


def read_session_log(path: Path) -> list[dict[str, Any]]:
    """The events of a session log, in order, each checked (raises ReplayError)."""
    events = []
    for number, line in enumerate(_read_bounded(path).split(b"\n"), 1):
        if len(line) > MAX_LINE_BYTES:
            raise ReplayError(f"{path}, line {number}: over {_mib(MAX_LINE_BYTES)}, "
                              "longer than any event Lily writes.")
        if not line.strip():
            continue
        try:
            event = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError:
            raise ReplayError(f"{path}, line {number}: not UTF-8 text.") from None
        except (ValueError, RecursionError):  # (nesting deeper than the parser goes)
            raise ReplayError(f"{path}, line {number}: not a JSON event.") from None
        if _nested_deeper(event, MAX_NESTING):
            raise ReplayError(f"{path}, line {number}: nested over {MAX_NESTING} levels "
                              "deep, deeper than any event Lily writes.")
        if (not isinstance(event, dict) or not isinstance(event.get("event"), str)
                or not isinstance(event.get("data"), dict)):
            raise ReplayError(f"{path}, line {number}: not a Lily event.")
        problem = _problem(event["event"], event["data"])
        if problem is not None:
            raise ReplayError(f"{path}, line {number} ({event['event']}): {problem}.")
        events.append(event)
    if not events or events[0]["event"] != "session_started":
        raise ReplayError(f"{path}: not a Lily session log (it must start with "
                          "session_started).")
    return events


def _nested_deeper(value: Any, limit: int) -> bool:
    """Whether lists and objects nest deeper than `limit` (without recursion)."""
    level: list[tuple[Any, int]] = [(value, 1)]
    while level:
        item, depth = level.pop()
        inner = (item.values() if isinstance(item, dict) else item
                 if isinstance(item, list) else ())
        for child in inner:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                level.append((child, depth + 1))
    return False


def _read_bounded(path: Path) -> bytes:
    """The file's bytes; refused without reading it when it is no regular file or too
    large (checked before opening, and again on what was opened: it may have changed)."""
    try:
        _check_file(path, os.stat(path))
        # O_NONBLOCK: were it swapped for a FIFO since, opening it would not wait.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ReplayError(f"no session log at {path}.") from None
    except OSError as exc:
        raise ReplayError(f"cannot read {path}: {exc.strerror or exc}.") from None
    try:
        _check_file(path, os.fstat(fd))
        chunks, size = [], 0
        while size <= MAX_LOG_BYTES:  # a file that grows while read stops here too
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise ReplayError(f"cannot read {path}: {exc.strerror or exc}.") from None
    finally:
        os.close(fd)
    if size > MAX_LOG_BYTES:
        raise ReplayError(_too_large(path))
    return b"".join(chunks)


def _check_file(path: Path, status: os.stat_result) -> None:
    mode = status.st_mode
    if stat.S_ISDIR(mode):
        raise ReplayError(f"{path} is a folder, not a session log.")
    if not stat.S_ISREG(mode):
        what = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "not a regular file")
        raise ReplayError(f"{path} is {what}, not a session log.")
    if status.st_size > MAX_LOG_BYTES:
        raise ReplayError(_too_large(path))


def _too_large(path: Path) -> str:
    return f"{path} is over {_mib(MAX_LOG_BYTES)}, larger than a session log can be."


def _mib(size: int) -> str:
    mib = 1024 * 1024
    return f"{size // mib} MiB" if size % mib == 0 else f"{size:,} bytes"


# --- each event against its kind's declaration ---------------------------------------


def _problem(kind: str, data: dict[str, Any]) -> str | None:
    """What is wrong with the data of one event, if its kind is declared: a field of the
    wrong type (a missing one is the reader's business: old logs lack some)."""
    if kind not in KINDS:
        return None  # a kind this Lily does not know: compared, never read
    try:
        check_fields(KINDS[kind], data)
        if kind == "model_call" and isinstance(data.get("response"), dict):
            build(RecordedResponse, data["response"], prefix="response.")
    except ShapeError as exc:
        return f"{printable(_cut(exc.key, 80))} is {_kind_of(exc.value)}, not {exc.expected}"
    return None


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return f"a number ({_cut(str(value))})"
    if isinstance(value, str):
        return f"a string ({printable(json.dumps(_cut(value), ensure_ascii=False))})"
    return "a list" if isinstance(value, list) else "an object"


def _cut(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def printable(text: str) -> str:
    """`text` with what a terminal would act on (control characters, ANSI escapes,
    bidirectional overrides) written as `\\uXXXX`: a log's text is shown, never obeyed."""
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)
