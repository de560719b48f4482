"""Where and how a stdio MCP server starts, so that a downloaded folder runs nothing
before it is trusted, whichever configuration named the server.

The person's servers (`<Lily home>/mcp.json`) start in every workspace, trusted or not:
so they start outside it, in an empty folder of their own (`npx` would otherwise run the
folder's `node_modules/.bin`, `python -m x` its `x.py`), with `PYTHONSAFEPATH=1` (no
Python puts the folder it runs in on `sys.path`), and with no PATH entry inside the
workspace. A workspace's servers start only once it is trusted (environment.py), in the
workspace, as Claude Code runs a project's. For both, the command is found as the
sandbox finds a program (`search_path`: no empty or relative PATH entry, which would
name the folder Lily runs in), on the PATH the server is given too.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lily_kernel.execution.sandbox import search_path
from lily_kernel.mcp_tools.servers import McpServer

__all__ = ["Launch", "plan_launch"]


@dataclass(frozen=True)
class Launch:
    """A stdio server's program (found), environment (added to the SDK's few variables)
    and working folder."""

    command: str
    env: dict[str, str]
    cwd: Path


def _inside(entry: str, workspace: str) -> bool:
    real = os.path.realpath(entry)
    return real == workspace or real.startswith(workspace.rstrip(os.sep) + os.sep)


def _found(command: str, path: str, cwd: Path, person: bool) -> str:
    """The program to run; raises ValueError saying why there is none."""
    if os.path.isabs(command):
        return command
    if os.sep in command or (os.altsep and os.altsep in command):
        if person:  # relative to where? Never to the folder Lily happens to run in
            raise ValueError(f"its command {command!r} is a relative path; give its full "
                             "path in your mcp.json")
        return str(cwd / command)  # the trusted workspace's own program
    found = shutil.which(command, path=path)
    if found is None:
        raise ValueError(f"{command!r} is not found on PATH (relative entries and, for "
                         "your own servers, the workspace's are left out)")
    return found


def plan_launch(server: McpServer, workspace: Path, environ: Mapping[str, str],
                neutral: Path) -> Launch:
    """How `server` starts: in `neutral` (an empty folder of its own) when it is the
    person's, in `workspace` when it is the workspace's; raises ValueError when its
    command cannot be found."""
    config = server.config
    assert config.command is not None
    person = server.origin == "person"
    given = config.env.get("PATH", environ.get("PATH", os.defpath))
    path = search_path({"PATH": given})
    if person:
        top = os.path.realpath(workspace)
        path = os.pathsep.join(p for p in path.split(os.pathsep) if not _inside(p, top))
    cwd = neutral if person else workspace
    env = {**({"PYTHONSAFEPATH": "1"} if person else {}), **config.env, "PATH": path}
    return Launch(_found(config.command, path, cwd, person), env, cwd)
