"""What the person sees of a run besides its code, and what the model reads of it
besides its output, for every tool that runs code (shell, skill scripts, Python): its
output as it comes (capped as its result is), the files it created or changed in the
workspace (named, with their size; the images among them shown), the one line on
the skills it made or changed in the workspace's skills/ (held until the person trusts
them: docs/skills.md, "Trust"), and the one line on what the sandbox refused it.

The files are found by a look at the workspace before the run and after it
(execution/written.py): bounded, no content read but the few images shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lily_kernel.display import Notice
from lily_kernel.display.runs import (
    files_written,
    image_output,
    output_cut,
    skills_held,
    stream_output,
)
from lily_kernel.tools.context import ToolContext

if TYPE_CHECKING:
    from lily_kernel.execution.written import Snapshot, WrittenFile

__all__ = ["CellOutput", "RunWatch", "skills_written", "watch_run"]

SKILLS = "skills"  # the workspace's skills folder, which runs may write
SKILL_FILE = "SKILL.md"


@dataclass
class CellOutput:
    """A process's output passed to the cell as it comes (`on_output` of
    execution/runner.py), and the line where the cap cut it."""

    ctx: ToolContext
    shown: bool = False

    def __call__(self, name: str, text: str) -> None:
        self.shown = True
        self.ctx.show(stream_output(name, text))

    def cut(self, total_bytes: int, kept_bytes: int) -> None:
        """Say where the output stopped in the cell, when the cap cut it."""
        if total_bytes > kept_bytes:
            self.ctx.show(output_cut(total_bytes))


@dataclass
class RunWatch:
    """The workspace as it was before a run; `finish` after it."""

    ctx: ToolContext
    before: Snapshot | None = None

    async def finish(self, output: str = "", exit_code: int | None = 0) -> str:
        """After the run: the files it wrote shown (named, images shown) and the notes
        the model reads after its output (the files it wrote, what the sandbox
        refused it: prompting/runs.py), "" when there are none."""
        import asyncio

        from lily_kernel.execution.written import take_snapshot, written_files, written_images
        from lily_kernel.prompting.runs import held_skills_note, refusal_note, written_note

        notes = []
        if self.before is not None:
            workspace = self.ctx.workspace.resolve()
            after = await asyncio.to_thread(take_snapshot, workspace)
            written = written_files(self.before, after)
            complete = self.before.complete and after.complete
            if shown := files_written(written, complete):
                self.ctx.show(Notice(shown))
            for path, mime, data in await asyncio.to_thread(written_images, workspace, written):
                self.ctx.show(image_output(path, mime, data))
            notes.append(written_note(written, complete))
            if skills := skills_written(workspace, self.before, written):
                self.ctx.show(Notice(skills_held(skills)))
                self.ctx.skills_written()
                notes.append(held_skills_note(skills))
        notes.append(refusal_note(output, exit_code))
        return "\n".join(n for n in notes if n)


def skills_written(workspace: Path, before: Snapshot, written: Sequence[WrittenFile]
                   ) -> list[tuple[str, bool]]:
    """The skill folders under the workspace's skills/ that a run wrote in, each with
    whether it is new (its SKILL.md was not there before): the nearest folder holding a
    SKILL.md above each file written, else the file's first folder under skills/."""
    found: dict[str, bool] = {}
    for file in written:
        parts = file.path.split("/")
        if parts[0] != SKILLS or len(parts) < 2:
            continue
        folders = ["/".join(parts[:n]) for n in range(len(parts) - 1, 1, -1)]
        folder = next((f for f in folders if (workspace / f / SKILL_FILE).is_file()),
                      "/".join(parts[:2]))
        found.setdefault(folder, f"{folder}/{SKILL_FILE}" not in before.files)
    return sorted(found.items())


async def watch_run(ctx: ToolContext) -> RunWatch:
    """The workspace looked at before a run (off the event loop)."""
    import asyncio

    from lily_kernel.execution.written import take_snapshot

    try:
        before = await asyncio.to_thread(take_snapshot, ctx.workspace.resolve())
    except OSError:
        before = None
    return RunWatch(ctx, before)
