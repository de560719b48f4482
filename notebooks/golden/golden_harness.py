"""The golden transcripts' harness: the person's hands between two cells, the scripted
model, and the sanitizer.

`snapshot_stability.ipynb` shows that a skill added on disk mid-session stays invisible
until `/reload_skills`. A Lily notebook cannot write files itself (no Python, and the
`write` tool cannot be dispatched), so the harness plays the person: just before the
cell tagged `harness-adds-late-skill` runs, it creates `skills/late_arrival/`, and it
removes the folder afterwards. Both nbval (through conftest.py) and `regenerate.py` use
this module. By hand in JupyterLab, create that folder yourself at that point.
"""

from __future__ import annotations

import configparser
import functools
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "HERE",
    "LATE_SKILL_TAG",
    "SCRIPTED_REPLIES",
    "add_late_skill",
    "needs_sandbox",
    "remove_late_skill",
    "remove_sandbox_placeholders",
    "sanitize",
    "script_cell",
    "start_model_server",
]

HERE = Path(__file__).resolve().parent
LATE_SKILL_TAG = "harness-adds-late-skill"
LATE_SKILL = HERE / "skills" / "late_arrival"
SANITIZE_FILE = HERE / "sanitize.cfg"

LATE_SKILL_TEXT = """---
summary: Arrived on disk after the session started.
---

# Late arrival

Visible only after `/reload_skills`.
"""


def add_late_skill() -> None:
    LATE_SKILL.mkdir(parents=True, exist_ok=True)
    (LATE_SKILL / "SKILL.md").write_text(LATE_SKILL_TEXT, encoding="utf-8")


def remove_late_skill() -> None:
    shutil.rmtree(LATE_SKILL, ignore_errors=True)


# chat/chat.ipynb talks to a model: the loopback server of the test suite, started once
# per run. What it answers for a cell is in that cell's metadata under this key.
SCRIPTED_REPLIES = "lily_scripted_replies"
DUMMY_KEY = "sk-golden-not-a-real-key"


def start_model_server() -> Any:
    """Start the loopback OpenAI-compatible server and point new kernels at it."""
    sys.path.insert(0, str(HERE.parent.parent))  # the repository, for tests.support
    from tests.support.openai_server import OpenAIServer

    server = OpenAIServer().__enter__()
    os.environ["LILY_API_BASE"] = server.base_url
    os.environ["OPENAI_API_KEY"] = DUMMY_KEY
    return server


def script_cell(server: Any, cell: Any) -> None:
    """Queue exactly this cell's scripted replies (nothing left over from before)."""
    from tests.support.openai_server import Reply

    server.replies.clear()
    server.script(*(Reply(**reply) for reply in cell.metadata.get(SCRIPTED_REPLIES, [])))


# python/python_turn.ipynb runs the model's code and the person's `/python` in bubblewrap:
# its notebook metadata says so under this key, and nbval skips it where there is none.
NEEDS_SANDBOX = "lily_needs_sandbox"


@functools.cache  # asked for every cell of every golden
def needs_sandbox(notebook: Path) -> bool:
    """Whether this golden's cells run code in the sandbox (its metadata says so)."""
    import nbformat

    return bool(nbformat.read(notebook, as_version=4).metadata.get(NEEDS_SANDBOX))


def remove_sandbox_placeholders() -> None:
    """Remove the empty mount points the subkernel's sandbox made in a golden's folder.

    Lily removes them when its subkernel ends; nbval kills the kernel instead
    (`shutdown_kernel(now=True)`), so they would be left in the checkout. Only empty
    folders and files go (execution/mounts.py `remove_placeholders`).
    """
    from lily_kernel.execution.mounts import WORKSPACE_READ_ONLY, remove_placeholders

    for notebook in HERE.rglob("*.ipynb"):
        if needs_sandbox(notebook):
            folder = notebook.parent
            remove_placeholders([*(folder / name for name in WORKSPACE_READ_ONLY),
                                 folder / "no-user-home"])


def _patterns() -> list[tuple[re.Pattern[str], str]]:
    """The regex/replace pairs of sanitize.cfg, read as nbval reads them."""
    parser = configparser.ConfigParser()
    parser.read(SANITIZE_FILE, encoding="utf-8")
    return [(re.compile(parser.get(s, "regex")), parser.get(s, "replace"))
            for s in parser.sections()]


def sanitize(text: str) -> str:
    """Apply sanitize.cfg, so stored outputs hold no machine-specific paths or digests."""
    for pattern, replace in _patterns():
        text = pattern.sub(replace, text)
    return text
