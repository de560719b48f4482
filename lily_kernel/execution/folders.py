"""Private folders of this Lily process in the system's temporary folder (mode 0700), named
after their owner, and removed by the next Lily that makes one once their owner is gone.

A folder Lily removes when it is done with it still stays when Lily is killed (`kill -9`)
before that: its name holds the owner's pid and the time that process started
(`lily-<kind>-<pid>.<start>-…`), so a later Lily tells a folder of a live process from one
whose process ended, even when its pid was given to another process since.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["make_private_folder", "remove_with_owner", "sweep_private_folders"]

JANITOR = Path(__file__).with_name("janitor.py")
_janitors: list[subprocess.Popen[bytes]] = []  # kept: each ends after this process does

_NAME = re.compile(r"lily-[a-z]+-(\d+)\.(\d+)-")


def _started(pid: int | str) -> str | None:
    """When process `pid` started (clock ticks since boot, /proc/<pid>/stat), or None
    when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as status:
            fields = status.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return fields[19].decode() if len(fields) > 19 else None


def sweep_private_folders(parent: Path | None = None) -> None:
    """Remove the folders of Lily processes that no longer run: ours only (by owner), never
    a link, each without following the links it holds."""
    parent = parent or Path(tempfile.gettempdir())
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            match = _NAME.match(entry.name)
            if match is None or _started(match[1]) == match[2]:
                continue
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
                    shutil.rmtree(entry.path)


def make_private_folder(kind: str) -> Path:
    """A new folder (mode 0700) of this process for `kind` (`python`), after removing those
    of Lily processes that ended without removing theirs."""
    sweep_private_folders()
    return Path(tempfile.mkdtemp(prefix=f"lily-{kind}-{os.getpid()}.{_started('self')}-"))


def remove_with_owner(folder: Path) -> None:
    """Have `folder` removed the moment this process ends, `kill -9` included (a folder
    that lives as long as the session, such as the proxy's socket's): a small watcher
    (execution/janitor.py) in a session of its own waits for this process to end."""
    _janitors.append(subprocess.Popen(
        [sys.executable, "-I", "-S", str(JANITOR), str(os.getpid()), str(folder)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True))
