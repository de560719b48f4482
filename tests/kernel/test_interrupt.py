"""The stop button during a long operation: KeyboardInterrupt, kernel alive, session intact."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from queue import Empty

from tests.kernel.conftest import TIMEOUT, lily_kernel

SKILLS = 40_000  # a full reload takes well over a second on the reference machine
ROUNDS = 10  # cells under a stop button pressed without pause (before the fix, most
# rounds lost their reply)
INTERRUPTED = ["KeyboardInterrupt: the cell was interrupted"]


def _generate_skills(root: Path, count: int) -> None:
    for i in range(count):
        folder = root / f"s{i:05d}"
        os.mkdir(folder)
        with open(folder / "SKILL.md", "w", encoding="utf-8") as handle:
            handle.write(f"---\nsummary: Generated skill {i}.\n---\n\nBody {i}.\n")


def test_interrupting_a_long_reload_leaves_the_kernel_alive_and_unchanged(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "workspace"
    (workspace / "skills").mkdir(parents=True)
    with lily_kernel(workspace, tmp_path / "home") as kernel:
        # An interrupt while idle is ignored.
        kernel.km.interrupt_kernel()
        # A round trip through the kernel's main thread: the signal is handled by then.
        assert kernel.request("kernel_info")["status"] == "ok"
        assert kernel.execute("/skills").status == "ok"

        # Fill the folder after the start, so the start stays fast and the reload is slow.
        _generate_skills(workspace / "skills", SKILLS)
        began = time.monotonic()
        msg_id = kernel.kc.execute("/reload_skills")
        reply = kernel.interrupt_until_reply(msg_id)  # no sleep: pressed until it lands
        interrupted_after = time.monotonic() - began
        assert reply["parent_header"]["msg_id"] == msg_id
        assert reply["content"]["status"] == "error"
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        assert reply["content"]["traceback"] == ["KeyboardInterrupt: the cell was interrupted"]
        assert kernel.km.is_alive()

        # The next cell runs, and the interrupted reload changed nothing.
        skills = kernel.execute("/skills")
        assert skills.status == "ok"
        assert "Skills: 3 available (snapshot 1," in skills.plain

        full = kernel.execute("/reload_skills", timeout=120)
        assert full.status == "ok"
        assert "Reloaded skills: snapshot 2 (was 1)" in full.plain
        assert re.search(rf"^available +{SKILLS + 3}$", full.plain, re.M)
        # The interrupt really stopped the cell early, not after the work was done.
        assert interrupted_after < full.seconds


@contextmanager
def _stop_pressed_without_pause(pid: int) -> Iterator[None]:
    """The stop button (SIGINT to the kernel's process group, as jupyter_client sends
    it) pressed again and again, with no pause, while inside: it lands at every moment
    of a cell, the moments before its task exists and after it ended included."""
    group = os.getpgid(pid)
    assert group != os.getpgrp()  # the kernel's group alone (jupyter_client starts one)
    done = threading.Event()

    def press() -> None:
        while not done.is_set():
            os.killpg(group, signal.SIGINT)

    presser = threading.Thread(target=press, daemon=True)
    presser.start()
    try:
        yield
    finally:
        done.set()
        presser.join()


def test_every_cell_answers_a_stop_pressed_at_any_moment_and_a_stopped_one_changes_nothing(
    tmp_path: Path,
) -> None:
    # ipykernel raises KeyboardInterrupt on a press while it takes the cell up (before
    # the cell's task can be cancelled) or before it sends the reply: its handler ended
    # there and the cell never answered (at load 8: "no reply 120 s after the stop").
    workspace = tmp_path / "workspace"
    (workspace / "skills").mkdir(parents=True)
    with lily_kernel(workspace, tmp_path / "home") as kernel:
        assert kernel.execute("/skills").status == "ok"
        answered: list[str] = []
        pid = kernel.km.provisioner.pid  # type: ignore[union-attr]
        for _ in range(ROUNDS):
            with _stop_pressed_without_pause(pid):
                msg_id = kernel.kc.execute("/reload_skills")
                try:
                    reply = kernel.reply_to(msg_id, TIMEOUT)["content"]
                except Empty:
                    raise AssertionError(
                        f"cell {len(answered) + 1} never answered the stop") from None
            assert kernel.km.is_alive()
            # Stopped, or done before the stop landed: nothing else.
            assert reply["status"] == "ok" or reply["traceback"] == INTERRUPTED, reply
            answered.append(reply["status"])

        # Only the reloads that answered "ok" made a snapshot: a stopped one changed
        # nothing, even where the press came before its task existed.
        version = 1 + answered.count("ok")
        skills = kernel.execute("/skills")
        assert skills.status == "ok", answered
        assert f"Skills: 3 available (snapshot {version}," in skills.plain, answered
