"""Built-in file tools (read, list, write), confined to the workspace."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, Field

from lily_kernel.errors import ToolError
from lily_kernel.tools.registry import Tool, ToolContext

__all__ = ["MAX_READ_CHARS", "file_tools", "resolve_in_workspace"]

MAX_READ_CHARS = 100_000
MAX_LIST_ENTRIES = 500


def resolve_in_workspace(workspace: Path, relative: str) -> Path:
    """`relative` inside the workspace, refusing absolute paths, `..` and link escapes."""
    text = relative.strip() or "."
    pure = PurePosixPath(text.replace("\\", "/"))
    if pure.is_absolute() or (len(text) > 1 and text[1] == ":"):
        raise ToolError(f"'{relative}' is absolute; give a path inside the workspace.")
    if ".." in pure.parts:
        raise ToolError(f"'{relative}' uses '..'; paths must stay inside the workspace.")
    root = workspace.resolve()
    target = (root / pure).resolve()
    if target != root and not target.is_relative_to(root):
        raise ToolError(f"'{relative}' leads outside the workspace (through a link).")
    return target


class ReadArgs(BaseModel):
    path: str = Field(description="File path relative to the workspace.")


class ListArgs(BaseModel):
    path: str = Field(".", description="Folder path relative to the workspace.")


class WriteArgs(BaseModel):
    path: str = Field(description="File path relative to the workspace.")
    content: str = Field(description="The complete new content of the file.")


def _read(args: ReadArgs, ctx: ToolContext) -> str:
    target = resolve_in_workspace(ctx.workspace, args.path)
    if not target.is_file():
        raise ToolError(f"no file '{args.path}' in the workspace.")
    try:
        text = target.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"'{args.path}' is not a UTF-8 text file.") from None
    except OSError as exc:
        raise ToolError(f"cannot read '{args.path}': {exc.strerror}.") from None
    if len(text) > MAX_READ_CHARS:
        return text[:MAX_READ_CHARS] + f"\n[... truncated at {MAX_READ_CHARS:,} characters]"
    return text


def _list(args: ListArgs, ctx: ToolContext) -> str:
    target = resolve_in_workspace(ctx.workspace, args.path)
    if not target.is_dir():
        raise ToolError(f"no folder '{args.path}' in the workspace.")
    try:
        entries = [e for e in os.scandir(target) if not e.name.startswith(".")]
    except OSError as exc:
        raise ToolError(f"cannot list '{args.path}': {exc.strerror}.") from None
    folders = sorted(e.name + "/" for e in entries if e.is_dir())
    files = sorted(f"{e.name}  ({e.stat().st_size:,} bytes)" for e in entries
                   if not e.is_dir())
    lines = folders + files
    if not lines:
        return f"{args.path}: empty folder"
    shown = lines[:MAX_LIST_ENTRIES]
    more = len(lines) - len(shown)
    return "\n".join(shown + ([f"... and {more} more"] if more else []))


def _write(args: WriteArgs, ctx: ToolContext) -> str:
    target = resolve_in_workspace(ctx.workspace, args.path)
    if target == ctx.workspace.resolve() or target.is_dir():
        raise ToolError(f"'{args.path}' is a folder.")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(args.content, encoding="utf-8")
    except OSError as exc:
        raise ToolError(f"cannot write '{args.path}': {exc.strerror}.") from None
    return f"wrote {len(args.content):,} characters to {args.path}"


def file_tools() -> list[Tool]:
    """Fresh instances of the built-in file tools."""
    return [
        Tool("read", "Read a UTF-8 text file of the workspace.", ReadArgs, _read,
             text_argument="path"),
        Tool("list", "List a folder of the workspace (folders first, with sizes).",
             ListArgs, _list, text_argument="path"),
        Tool("write", "Create or replace a text file in the workspace.", WriteArgs, _write),
    ]
