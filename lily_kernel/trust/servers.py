"""A folder's MCP servers as the trust question names them: what trusting would run or
contact, and which of the person's environment variables would go there, and how.

A server's `env` and `headers` are named, never their values; but a value written
`${MY_SECRET}` is the person's variable, filled in when the server starts
(mcp_tools/servers.py): trusting sends it. So each variable is named with where it goes,
`sends $MY_SECRET (your environment) to https://x as header Authorization`. Bounded,
never by leaving a variable out unsaid: past MAX_VARIABLES, their number is said.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from lily_kernel.config import McpServerConfig

__all__ = ["MAX_VARIABLES", "server_line"]

MAX_TARGET = 160  # characters of a command line or URL shown
MAX_NAME = 60  # of a variable's, a header's or an env entry's name
MAX_NAMES = 10  # env and header names listed
MAX_VARIABLES = 10  # variables named, each with where it goes; past it, counted
MAX_PLACES = 3  # places one variable goes to, named; the rest counted


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = (limit - 1) // 2
    return f"{text[:half]}…{text[-half:]} ({len(text):,} characters)"


def _listed(names: list[str], limit: int) -> str:
    shown = [_cut(n, MAX_NAME) for n in names[:limit]]
    return ", ".join(shown + ([f"and {len(names) - limit:,} more"] if len(names) > limit
                              else []))


def _where(config: McpServerConfig) -> str:
    """Where the server's variables go: its program, or its URL's scheme and host."""
    if config.command is not None:
        return _cut(config.command, MAX_NAME)
    parts = urlsplit(str(config.url))
    origin = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else \
        str(config.url)
    return _cut(origin, MAX_TARGET)


_AS = {"command": "in its command", "argument": "as an argument", "url": "in its URL"}


def _place(place: str) -> str:
    kind, _, name = place.partition(" ")
    if kind == "env":
        return f"as its variable {_cut(name, MAX_NAME)}"
    if kind == "header":
        return f"as header {_cut(name, MAX_NAME)}"
    return _AS[kind]


def _sends(config: McpServerConfig) -> str:
    """`sends $VAR (your environment) to <where> as …` for each of the person's
    variables the server's settings name."""
    places: dict[str, list[str]] = {}
    for variable, place in config.variables():
        if _place(place) not in places.setdefault(variable, []):
            places[variable].append(_place(place))
    if not places:
        return ""
    where = _where(config)
    if len(places) > MAX_VARIABLES:
        return (f"sends {len(places):,} of your environment's variables to {where} (too "
                "many to name here; read its lily.yaml)")
    return "; ".join(f"sends ${_cut(variable, MAX_NAME)} (your environment) to {where} "
                     + _listed(found, MAX_PLACES) for variable, found in places.items())


def server_line(name: str, config: McpServerConfig) -> str:
    """One server as the question shows it: `name (what it runs or reaches; with its env
    and header names; what of yours it sends where)`."""
    if config.command is None and config.url is None:
        return name  # (one with neither is refused where servers start)
    what = " ".join([config.command, *config.args]) if config.command is not None \
        else str(config.url)
    parts = [_cut(what, MAX_TARGET)]
    names = [*config.env, *config.headers]
    if names:
        parts.append(f"with {_listed(sorted(names), MAX_NAMES)}")
    if sends := _sends(config):
        parts.append(sends)
    return f"{_cut(name, MAX_NAME)} ({'; '.join(parts)})"
