"""The stop button during a long operation: KeyboardInterrupt, kernel alive, session intact."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from tests.kernel.conftest import lily_kernel

SKILLS = 40_000  # a full reload takes well over a second on the reference machine


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
