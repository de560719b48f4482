"""Which MCP servers a session may use: the person's own (`<Lily home>/mcp.json`) and
the workspace's (`mcp_servers` in lily.yaml, held until the workspace is trusted).

Both are written as Claude Code's `.mcp.json` entries (config.py, `McpServerConfig`):
a program run over stdio, or a server reached over HTTP. The person's file is the very
shape of `.mcp.json` (`{"mcpServers": {...}}`), so one can be copied over. `${VAR}` and
`${VAR:-default}` in a command, its arguments, `env`, a URL or `headers` are the
person's variables, as in Claude Code. A workspace's server of the same name as one of
the person's wins, as a project's does in Claude Code (it applies only once trusted);
names compare whatever their case, as the policy names them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from lily_kernel.config import MCP_VARIABLE, McpServerConfig, read_config_file
from lily_kernel.errors import ConfigError
from lily_kernel.tools.mcp_names import TOOL_PREFIX
from lily_kernel.validation import ShapeError, build

__all__ = ["PERSON_FILE", "McpServer", "configured_servers", "held_servers"]

PERSON_FILE = "mcp.json"  # under the Lily home
# A server's name goes into its tools' names (`mcp__<server>__<tool>`): no `__` in it,
# so the name splits back unambiguously.
_NAME = re.compile(r"[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*")

Origin = Literal["person", "workspace"]
Transport = Literal["stdio", "http", "sse"]


@dataclass(frozen=True)
class McpServer:
    """One configured server: its name, whose configuration named it, how it is reached,
    and its settings with the person's variables filled in."""

    name: str
    origin: Origin
    transport: Transport
    config: McpServerConfig

    @property
    def target(self) -> str:
        """What it runs or reaches, as people read it (never its env or headers)."""
        return _target(self.config)

    @property
    def prefix(self) -> str:
        """The start of its tools' names: `mcp__<name>__`."""
        return f"{TOOL_PREFIX}{self.name}__"


def _expand(text: str, environ: Mapping[str, str]) -> str:
    return MCP_VARIABLE.sub(lambda m: environ.get(m.group(1)) or (m.group(2) or ""), text)


def _filled(config: McpServerConfig, environ: Mapping[str, str]) -> McpServerConfig:
    def fill(text: str | None) -> str | None:
        return None if text is None else _expand(text, environ)

    return replace(config, command=fill(config.command),
                   args=tuple(_expand(a, environ) for a in config.args),
                   env={k: _expand(v, environ) for k, v in config.env.items()},
                   url=fill(config.url),
                   headers={k: _expand(v, environ) for k, v in config.headers.items()})


def _server(name: str, origin: Origin, config: McpServerConfig, where: str,
            environ: Mapping[str, str]) -> McpServer:
    if not _NAME.fullmatch(name):
        raise ConfigError(f"{where}: MCP server name '{name}': letters, digits, '-' and "
                          "single '_' only (its tools are named mcp__<server>__<tool>).")
    kind = config.type or ("stdio" if config.command else "http" if config.url else None)
    if kind is None or (config.command and config.url):
        raise ConfigError(f"{where}: MCP server '{name}': give either `command` (a program "
                          "run over stdio) or `url` (a server reached over HTTP).")
    if kind == "stdio" and not config.command:
        raise ConfigError(f"{where}: MCP server '{name}': type stdio needs a `command`.")
    if kind != "stdio" and not config.url:
        raise ConfigError(f"{where}: MCP server '{name}': type {kind} needs a `url`.")
    return McpServer(name, origin, kind, _filled(config, environ))


def _person_servers(home: Path) -> dict[str, McpServerConfig]:
    """`<home>/mcp.json`'s `mcpServers` (none without the file); raises ConfigError."""
    path = home / PERSON_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read the file ({exc}).") from exc
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
        raise ConfigError(f"{path}: expected an object with `mcpServers`, as .mcp.json has.")
    try:
        return {str(name): build(McpServerConfig, entry if isinstance(entry, dict) else {
            "type": entry}, forbid_unknown=True, prefix=f"mcpServers.{name}.")
            for name, entry in data.get("mcpServers", {}).items()}
    except ShapeError as exc:
        raise ConfigError(f"{path}: key '{exc.key}': {exc.problem}.") from None


def _by_name(configs: Mapping[str, McpServerConfig], origin: Origin, where: str,
             environ: Mapping[str, str]) -> dict[str, McpServer]:
    """One file's servers by their names in lower case: a policy names a server whatever
    its case (tools/mcp_names.py), so two names that differ only in case are an error."""
    servers: dict[str, McpServer] = {}
    for name, config in configs.items():
        other = servers.get(name.lower())
        if other is not None:
            raise ConfigError(f"{where}: MCP servers '{other.name}' and '{name}': names are "
                              "compared whatever their case (mcp__<server> in a policy), "
                              "so these name one server; rename one.")
        servers[name.lower()] = _server(name, origin, config, where, environ)
    return servers


def configured_servers(workspace_servers: Mapping[str, McpServerConfig], home: Path,
                       where: Path, environ: Mapping[str, str]) -> tuple[McpServer, ...]:
    """The servers of the person (`<home>/mcp.json`) and of the workspace (lily.yaml at
    `where`, as the configuration applies it: held while untrusted), by name (a
    workspace's replaces the person's of the same name, whatever its case)."""
    servers = _by_name(_person_servers(home), "person", str(home / PERSON_FILE), environ)
    servers.update(_by_name(workspace_servers, "workspace", str(where), environ))
    return tuple(servers[key] for key in sorted(servers))


def _target(config: McpServerConfig) -> str:
    """What a server runs (its command line) or reaches (its URL)."""
    if config.command is not None:
        return " ".join((config.command, *config.args))
    return config.url or ""


def held_servers(workspace: Path, applied: tuple[McpServer, ...]
                 ) -> tuple[tuple[str, str], ...]:
    """The workspace's servers (its lily.yaml's) that do not apply, held until the
    person trusts the workspace: each one's name and what it would run or reach, as
    written (its variables not filled in; "" where the entry is malformed)."""
    try:
        named = read_config_file(workspace).data.get("mcp_servers")
    except ConfigError:
        return ()
    if not isinstance(named, dict):
        return ()
    started = {s.name for s in applied if s.origin == "workspace"}
    return tuple((str(name), _written_target(named[name]))
                 for name in sorted(named, key=str) if name not in started)


def _written_target(entry: object) -> str:
    try:
        return _target(build(McpServerConfig, entry)) if isinstance(entry, dict) else ""
    except ShapeError:
        return ""
