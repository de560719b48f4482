"""Remove a folder once the process that owns it has ended, however it ended.

The session's proxy keeps its socket in a private folder for as long as the session
lives (execution/folders.py `remove_with_owner`); when the Lily kernel is killed
(`kill -9`) nothing of it runs to remove the folder. This waits on the owner's pidfd,
in a session of its own (a signal to the kernel's process group does not end it first),
and removes the folder the moment the owner is gone. Run by path with `python -I -S`:
the standard library only.

    python -I -S janitor.py OWNER_PID FOLDER
"""

from __future__ import annotations

import os
import select
import shutil
import sys


def main(owner: int, folder: str) -> None:
    try:
        handle = os.pidfd_open(owner)
    except ProcessLookupError:
        pass  # already gone
    else:
        select.select([handle], [], [])
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
