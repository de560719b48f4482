"""Built-in file tools (read, list, write), confined to the workspace.

Refused: absolute paths, `..`, links leading out of the workspace, hidden paths (any
part starting with `.`: `.env`, `.git`, `.lily`, `.venv` — secrets and history live
there), and writes to Lily's own files (`ToolContext.protected`), all before anyone is
asked. A write over a notebook, or making a file that runs later (`RUNS_LATER`), is
asked whatever the policy says; while the person does not trust the folder, every
write is. File-system failures are reported as ToolError, never raised past the tool.
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from lily_kernel.errors import ToolError
from lily_kernel.host_files import open_inside, scan_inside, write_inside
from lily_kernel.tools.context import Question, ToolContext
from lily_kernel.tools.questions import call_question
from lily_kernel.tools.registry import ARGS_CONFIG, Tool, blocking
from lily_kernel.visible import visible

__all__ = ["MAX_READ_CHARS", "confine", "file_tools", "resolve_in_workspace"]

Handler = TypeVar("Handler", bound=Callable[..., Any])

MAX_READ_CHARS = 100_000
MAX_LIST_ENTRIES = 500


def resolve_in_workspace(workspace: Path, relative: str) -> Path:
    """`relative` inside the workspace, refusing absolute paths, `..` and link escapes."""
    text = relative.strip() or "."
    pure = PurePosixPath(text.replace("\\", "/"))
    if pure.is_absolute() or (len(text) > 1 and text[1] == ":"):
        raise ToolError(f"'{relative}' is absolute; give a path inside the workspace.")
    return confine(workspace, pure, relative, "the workspace")[0]


MAX_PATH_CHARS = 4096  # Linux's PATH_MAX; a part is at most 255 bytes


def short_path(path: str, limit: int = 200) -> str:
    """A path as an error shows it: whole up to `limit` characters, else its ends."""
    return path if len(path) <= limit else f"{path[:limit // 2]}…{path[-limit // 3:]}"


def confine(root: Path, pure: PurePosixPath, given: str, place: str
            ) -> tuple[Path, PurePosixPath]:
    """The real path behind `pure` (relative to `root`), kept inside `root`, and that
    path relative to `root`'s real one: the one rule for every path a tool is given (the
    workspace's, a skill folder's). `given` is the path as the caller wrote it and
    `place` names `root`, for the errors."""
    if len(given) > MAX_PATH_CHARS or any(len(p.encode("utf-8", "surrogateescape")) > 255
                                          for p in pure.parts):
        raise ToolError(f"'{short_path(given)}' is too long for a path "
                        f"({len(given):,} characters).")
    given = short_path(given)
    if ".." in pure.parts:
        raise ToolError(f"'{given}' uses '..'; paths must stay inside {place}.")
    if _hidden(pure.parts):
        raise ToolError(f"'{given}' is hidden (a part starts with '.'); it is off limits.")
    try:
        base = root.resolve()
        target = (base / pure).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # loops, NUL bytes, long names
        raise ToolError(f"'{given}' cannot be resolved ({_reason(exc)}).") from None
    if target != base and not target.is_relative_to(base):
        raise ToolError(f"'{given}' leads outside {place} (through a link).")
    inside = PurePosixPath(target.relative_to(base).as_posix())
    if _hidden(inside.parts):
        raise ToolError(f"'{given}' leads to a hidden path (through a link).")
    return target, inside


def _resolved(path: Path) -> Path:
    """`path` with its links followed; as written when they loop (still protected)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(path))


def _hidden(parts: tuple[str, ...]) -> bool:
    return any(part.startswith(".") and part not in (".", "..") for part in parts)


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def _filesystem_errors(handler: Handler) -> Handler:
    """Report what the file system refuses as the tool's error, not as a crash."""

    @functools.wraps(handler)
    def guarded(args: Any, ctx: ToolContext) -> Any:
        try:
            return handler(args, ctx)
        except (OSError, RuntimeError, ValueError) as exc:
            raise ToolError(f"the file system refused: {_reason(exc)}.") from None

    return guarded  # type: ignore[return-value]


@dataclass(frozen=True)
class ReadArgs:
    __pydantic_config__ = ARGS_CONFIG

    path: str
    """File path relative to the workspace."""


@dataclass(frozen=True)
class ListArgs:
    __pydantic_config__ = ARGS_CONFIG

    path: str = "."
    """Folder path relative to the workspace."""


@dataclass(frozen=True)
class WriteArgs:
    __pydantic_config__ = ARGS_CONFIG

    path: str
    """File path relative to the workspace."""
    content: str
    """The complete new content of the file."""


@_filesystem_errors
def _read(args: ReadArgs, ctx: ToolContext) -> str:
    base, inside = _inside(ctx.workspace, args.path)
    if not (base / inside).is_file():
        raise ToolError(f"no file '{args.path}' in the workspace.")
    try:
        # Opened as host_files opens what sandboxed code could swap (no link, no FIFO).
        # At most one character past what is returned (enough to know it was cut): a
        # multi-GB file must not be loaded whole to show its first 100,000 characters.
        with open(open_inside(base, inside), encoding="utf-8") as handle:
            text = handle.read(MAX_READ_CHARS + 1)
    except UnicodeDecodeError:
        raise ToolError(f"'{args.path}' is not a UTF-8 text file.") from None
    except OSError as exc:
        raise ToolError(f"cannot read '{args.path}': {_swapped(exc)}.") from None
    if len(text) > MAX_READ_CHARS:
        from lily_kernel.prompting.runs import cut_read

        return cut_read(text, MAX_READ_CHARS)
    return text


def _inside(workspace: Path, path: str) -> tuple[Path, PurePosixPath]:
    """The workspace's real folder and `path`'s real place inside it (links resolved
    and checked by `resolve_in_workspace`), for host_files to open step by step."""
    base = workspace.resolve()
    return base, PurePosixPath(resolve_in_workspace(workspace, path).relative_to(base))


def _swapped(exc: OSError) -> str:
    """Why a checked path could not be opened: most often, changed since the check."""
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EINVAL, errno.ENXIO):
        return "it, or a folder on its way, is no longer a plain file or folder"
    return exc.strerror or str(exc)


def _entry(name: str, kind: str, size: int) -> tuple[bool, str]:
    """(is a folder, how it is listed); a link (not followed: where it leads is checked
    when it is read) or a special file as such."""
    if kind == "folder":
        return True, name + "/"
    if kind == "file":
        return False, f"{name}  ({size:,} bytes)"
    return False, f"{name}  ({'link' if kind == 'link' else 'not a file'})"


@_filesystem_errors
def _list(args: ListArgs, ctx: ToolContext) -> str:
    base, inside = _inside(ctx.workspace, args.path)
    if not (base / inside).is_dir():
        raise ToolError(f"no folder '{args.path}' in the workspace.")
    try:
        entries = [e for e in scan_inside(base, inside) if not e[0].startswith(".")]
    except OSError as exc:
        raise ToolError(f"cannot list '{args.path}': {_swapped(exc)}.") from None
    described = [_entry(*e) for e in entries]
    lines = sorted(text for is_dir, text in described if is_dir) + sorted(
        text for is_dir, text in described if not is_dir)
    if not lines:
        return f"{args.path}: empty folder"
    shown = lines[:MAX_LIST_ENTRIES]
    more = len(lines) - len(shown)
    return "\n".join(shown + ([f"... and {more} more"] if more else []))


# Files that run later, when the person runs an everyday command in the folder (pytest,
# pip, make, npm, python itself): a write creating or changing one is asked whatever
# the policy says, as is one overwriting a notebook.
RUNS_LATER = frozenset({
    "conftest.py", "setup.py", "setup.cfg", "pyproject.toml", "noxfile.py", "tox.ini",
    "pytest.ini", "sitecustomize.py", "usercustomize.py", "fabfile.py", "dodo.py",
    "Makefile", "makefile", "GNUmakefile", "justfile", "Justfile", "Rakefile",
    "package.json", "Taskfile.yml", "Taskfile.yaml", "Dockerfile", "docker-compose.yml",
    "compose.yaml", "requirements.txt", "requirements-dev.txt", "constraints.txt",
    "environment.yml", "environment.yaml", "Pipfile", "tasks.py", "Snakefile",
    "Cargo.toml", "build.rs", "Gemfile", "Vagrantfile", "CMakeLists.txt", "meson.build"})
RUNS_LATER_SUFFIXES = (".pth",)  # read (and run) by every Python started with site-packages
_SCANNED_LINKS = 2_000  # entries looked at for links to a write's target (top, one down)


def _write_target(args: WriteArgs, ctx: ToolContext) -> Path:
    """Where a write would go, or why it may not (ToolError)."""
    target = resolve_in_workspace(ctx.workspace, args.path)
    # Resolved now, not when the session started: a link created since then counts.
    for own in map(_resolved, ctx.protected):
        if target == own or target.is_relative_to(own):
            raise ToolError(f"'{args.path}' is one of Lily's own files (configuration, "
                            "skills or persona); tools may not change it.")
    if target == ctx.workspace.resolve() or target.is_dir():
        raise ToolError(f"'{args.path}' is a folder.")
    return target


_RUNS_LATER_FOLDED = frozenset(name.casefold() for name in RUNS_LATER)


def _environment(target: Path, workspace: Path) -> Path | None:
    """The virtual or conda environment in the workspace holding `target`, if any: what
    is written there (bin/activate, a package) runs when the environment is used."""
    for folder in target.parents:
        if not folder.is_relative_to(workspace) or folder == workspace:
            return None
        if (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir():
            return folder
    return None


def _risk(target: Path, path: str, workspace: Path) -> str | None:
    """Why this write is asked whatever the policy says, or None (the model's `path`
    with its escapes and line breaks shown, like every value of a question). Names are
    compared case-insensitively: on macOS's and Windows' file systems `Conftest.py` is
    the `conftest.py` pytest runs, and `nb.IPYNB` the notebook."""
    path = visible(short_path(path))
    exists = target.exists()
    if target.suffix.casefold() == ".ipynb" and exists:
        return f"It would overwrite the notebook {path}."
    if (target.name.casefold() in _RUNS_LATER_FOLDED
            or target.suffix.casefold() in RUNS_LATER_SUFFIXES):
        verb = "overwrite" if exists else "create"
        return f"It would {verb} {path}, a file that runs later (pytest, pip, make, npm…)."
    environment = _environment(target, workspace)
    if environment is not None:
        return (f"It would change {path} in the Python environment "
                f"{visible(environment.name)}/, whose code runs when it is used.")
    if exists and target.stat().st_nlink > 1:
        return (f"It would change {path}, a file with other names (hard links) that the "
                "write changes too.")
    alias = _risky_link_to(target, workspace)
    if alias is not None:
        return (f"It would change {path}, which {visible(alias)} links to, a file that "
                "runs later (or a notebook).")
    if target.suffix == ".py" and not exists and _shadows_a_module(target.stem):
        return (f"It would create {path}, which a Python kernel started in its folder "
                f"imports instead of the module {visible(target.stem)}.")
    return None


def _risky(name: str) -> bool:
    folded = name.casefold()
    return (folded in _RUNS_LATER_FOLDED or folded.endswith(".ipynb")
            or folded.endswith(RUNS_LATER_SUFFIXES))


def _risky_link_to(target: Path, workspace: Path) -> str | None:
    """A link at the workspace's top or one level down, named like a file that runs later
    or a notebook, that leads to `target` (`conftest.py -> notes/data.txt`: writing the
    data file changes conftest.py); its path in the workspace, or None."""
    looked = 0
    folders = [workspace]
    for depth in range(2):
        deeper = []
        for folder in folders:
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                looked += 1
                if looked > _SCANNED_LINKS:
                    return None
                if entry.is_symlink():
                    if _risky(entry.name) and _resolved(Path(entry.path)) == target:
                        return os.path.relpath(entry.path, workspace)
                elif depth == 0 and entry.is_dir() and not entry.name.startswith("."):
                    deeper.append(Path(entry.path))
        folders = deeper
    return None


def _shadows_a_module(name: str) -> bool:
    """Whether a `<name>.py` would stand in for a module Python finds elsewhere (the
    standard library's, or an installed package's: `numpy.py`, `pandas.py`)."""
    import importlib.util
    import sys

    if not name.isidentifier():  # (a dotted name would make find_spec import a package)
        return False
    if name in sys.stdlib_module_names:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@_filesystem_errors
def _prepare_write(args: WriteArgs, ctx: ToolContext) -> Question:
    """The write's question, once its path is known to be writable: a write that may not
    happen fails before anyone is asked."""
    target = _write_target(args, ctx)
    question = call_question("write", {"path": args.path, "content": args.content})
    risk = _risk(target, args.path, ctx.workspace.resolve())
    if risk is None:
        return dataclasses.replace(question, subject=target)
    return dataclasses.replace(question, text=f"{risk}\n{question.text}", subject=target,
                               always=True)


@_filesystem_errors
def _write(args: WriteArgs, ctx: ToolContext) -> str:
    target = _write_target(args, ctx)  # again: a link made since the question counts
    base = ctx.workspace.resolve()
    try:  # and a link made since this check is refused by host_files
        write_inside(base, PurePosixPath(target.relative_to(base)),
                     args.content.encode("utf-8"))
    except OSError as exc:
        raise ToolError(f"cannot write '{args.path}': {_swapped(exc)}.") from None
    return f"wrote {len(args.content):,} characters to {args.path}"


def file_tools() -> list[Tool]:
    """Fresh instances of the built-in file tools."""
    return [
        Tool("read", "Read a UTF-8 text file of the workspace.", ReadArgs, blocking(_read),
             text_argument="path"),
        Tool("list", "List a folder of the workspace (folders first, with sizes).",
             ListArgs, blocking(_list), text_argument="path"),
        Tool("write", "Create or replace a text file in the workspace.", WriteArgs,
             blocking(_write), prepare=blocking(_prepare_write), asks_untrusted=True),
    ]
