"""The active skill's own files: paths confined to its folder, and `read_skill_file`
(each read a `skill_file_read` event with the file's sha256).

A skill's SKILL.md names its files relative to its folder (`references/forms.md`,
`scripts/fill.py`, OpenClaw's `{baseDir}/scripts/x.py`); these resolve them there,
whichever root the skill came from. Refused: absolute paths outside the folder, `..`,
links leading out of it, hidden parts. Reading is read-only and size-capped like `read`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from lily_kernel.errors import ToolError
from lily_kernel.tools.context import ActiveSkill, ToolContext
from lily_kernel.tools.files import MAX_READ_CHARS, confine, short_path
from lily_kernel.tools.registry import ARGS_CONFIG, Tool

__all__ = [
    "READ_SKILL_FILE",
    "SkillFile",
    "active_skill",
    "read_skill_file",
    "read_skill_file_tool",
    "resolve_in_skill",
]

READ_SKILL_FILE = "read_skill_file"
MAX_FILE_BYTES = 64 * 2**20  # a skill file larger than this is refused, not hashed
# Placeholders other agents put before a skill's own paths; they mean the skill folder.
# The same list as skills/invocation.py's FOLDER_PLACEHOLDERS (tools may not import
# skills/; a test keeps them equal): a body reaches the model with them replaced, but a
# model may still write them, e.g. after reading a reference file.
_FOLDER_PLACEHOLDERS = ("{baseDir}", "${CLAUDE_SKILL_DIR}", "{skill_dir}", "${SKILL_DIR}")


def active_skill(ctx: ToolContext) -> ActiveSkill:
    """The active skill, its files unchanged since it was trusted (else refused)."""
    if ctx.skill is None:
        raise ToolError("no skill is active; load one with load_skill first.")
    ctx.skill.check()
    return ctx.skill


def _relative_part(skill: ActiveSkill, path: str) -> PurePosixPath:
    """`path` as a path inside the skill folder (placeholders and the folder's own
    absolute path accepted as its prefix)."""
    text = path.strip().replace("\\", "/")
    for placeholder in _FOLDER_PLACEHOLDERS:
        if text.startswith(placeholder):
            text = text[len(placeholder):].lstrip("/")
    pure = PurePosixPath(text or ".")
    if pure.is_absolute():
        folder = PurePosixPath(skill.folder.as_posix())
        if not pure.is_relative_to(folder):
            raise ToolError(f"'{path}' is outside the skill '{skill.name}'; give a path "
                            "relative to the skill's folder.")
        pure = pure.relative_to(folder)
    return pure


def resolve_in_skill(skill: ActiveSkill, path: str) -> tuple[Path, str]:
    """The real file behind `path` in the skill folder, and its normalised relative name."""
    target, inside = confine(skill.folder, _relative_part(skill, path), path,
                             f"the skill '{skill.name}'")
    return target, inside.as_posix()


@dataclass(frozen=True)
class SkillFile:
    """One read: what the model is told, and what the event records."""

    skill: str
    path: str  # relative to the skill folder
    sha256: str
    size: int
    text: str


def read_skill_file(skill: ActiveSkill, path: str) -> SkillFile:
    """Read a UTF-8 file of the skill folder (truncated past MAX_READ_CHARS)."""
    target, relative = resolve_in_skill(skill, path)
    if not target.is_file():
        raise ToolError(f"no file '{short_path(path)}' in the skill '{skill.name}'.")
    bound = MAX_READ_CHARS * 4 + 1  # what can be shown (4 bytes a character), plus one
    digest, size, kept = hashlib.sha256(), 0, bytearray()
    try:
        if target.stat().st_size > MAX_FILE_BYTES:  # hashing it would hold a core for long
            raise ToolError(f"'{relative}' is {target.stat().st_size:,} bytes, over the "
                            f"{MAX_FILE_BYTES // 2**20} MiB a skill file may have.")
        with open(target, "rb") as handle:
            # The whole file is hashed (the event names the file's sha256); only the
            # part that can be shown is kept in memory.
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
                if len(kept) < bound:
                    kept += chunk[: bound - len(kept)]
    except OSError as exc:
        raise ToolError(f"cannot read '{short_path(path)}': {exc.strerror}.") from None
    data = bytes(kept)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Not UTF-8, unless the bound cut a character in two (only when it cut the file).
        if size <= len(data) or exc.start < len(data) - 4:
            raise ToolError(f"'{short_path(path)}' is not a UTF-8 text file.") from None
        text = data[: exc.start].decode("utf-8")
    if len(text) > MAX_READ_CHARS or len(data) > MAX_READ_CHARS * 4:
        from lily_kernel.prompting.runs import cut_read

        text = cut_read(text, MAX_READ_CHARS)
    return SkillFile(skill.name, relative, digest.hexdigest(), size, text)


@dataclass(frozen=True)
class ReadSkillFileArgs:
    __pydantic_config__ = ARGS_CONFIG

    path: str
    """File path relative to the active skill's folder, e.g. references/forms.md."""


async def _read_skill_file(args: ReadSkillFileArgs, ctx: ToolContext) -> str:
    import asyncio  # on the conversation path only

    from lily_kernel.events import SkillFileRead

    found = await asyncio.to_thread(lambda: read_skill_file(active_skill(ctx), args.path))
    ctx.emit(SkillFileRead(skill=found.skill, path=found.path, sha256=found.sha256,
                           size=found.size))
    return found.text


def read_skill_file_tool() -> Tool:
    return Tool(
        READ_SKILL_FILE,
        "Read a file of the active skill's folder (references, templates, scripts), by "
        "its path relative to that folder, as the SKILL.md names it.",
        ReadSkillFileArgs, _read_skill_file, offered="with_skill", kept_by=None,
    )
