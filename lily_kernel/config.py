"""Lily's configuration: optional `<workspace>/lily.yaml` overlaid by LILY_* variables.

Precedence, highest first: environment variable > lily.yaml > default. The dataclasses
below are the one description of every key (name, type, bounds, default); `load_config`
validates against them with plain code (`validation.build`). An unknown key or a bad
value raises `ConfigError` naming the file (or variable), the key and the problem.
"""

from __future__ import annotations

import hashlib
import os
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, Literal

from lily_kernel.errors import ConfigError
from lily_kernel.host_patterns import bad_host_entry
from lily_kernel.validation import ShapeError, build, field_keys, parse_text, spec

__all__ = [
    "CONFIG_FILE",
    "EMBEDDED_MODEL",
    "LITELLM_KEYS",
    "LOCAL_MODEL",
    "MCP_VARIABLE",
    "ConfigFile",
    "LilyConfig",
    "McpServerConfig",
    "ModelConfig",
    "NetworkConfig",
    "Profile",
    "ToolsConfig",
    "is_local_model",
    "load_config",
    "read_config_file",
    "resolved_path",
]

CONFIG_FILE = "lily.yaml"
# `model: local` is the embedded model (the `local` extra); `model: local/<file.gguf>`
# runs any GGUF file in-process. Every other name is a litellm model name.
LOCAL_MODEL = "local"
EMBEDDED_MODEL = "SmolLM2-135M-Instruct"


def is_local_model(name: str | None) -> bool:
    return name is not None and (name == LOCAL_MODEL or name.startswith(LOCAL_MODEL + "/"))

# The policy profile: `ask`, the tools asked by default (python, shell) ask before each
# call; `auto` ("full auto"), they run without asking (tools/policy.py).
Profile = Literal["ask", "auto"]


@dataclass(frozen=True)
class ToolsConfig:
    """Tool policy, each key a list of tool names where `*` is every tool: `allow`; `ask`,
    the person's yes for each call; `deny`, always wins (tools/policy.py)."""

    allow: tuple[str, ...] = field(default=("*",), metadata=spec(env_list="names"))
    ask: tuple[str, ...] = field(default=(), metadata=spec(env_list="names"))
    deny: tuple[str, ...] = field(default=(), metadata=spec(env_list="names"))


@dataclass(frozen=True)
class McpServerConfig:
    """One MCP server, as Claude Code's `.mcp.json` writes it: a program Lily starts and
    speaks to over stdio (`command`, `args`, `env`), or a server reached over HTTP
    (`url`, `headers`; `type: http`). `timeout`: seconds a call (and the start) may take.
    mcp_tools/servers.py checks that it names one or the other."""

    type: Literal["stdio", "http", "sse"] | None = None
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = field(default=60.0, metadata=spec(gt=0, le=86_400))

    def variables(self) -> list[tuple[str, str]]:
        """Where the person's variables (`${VAR}`, `${VAR:-default}`) go, as written:
        (variable, place), the place `command`, `argument`, `url`, `env NAME` or
        `header NAME`, in the order written."""
        texts = [("command", self.command or ""), *(("argument", a) for a in self.args),
                 *((f"env {k}", v) for k, v in self.env.items()), ("url", self.url or ""),
                 *((f"header {k}", v) for k, v in self.headers.items())]
        return [(m.group(1), place) for place, text in texts
                for m in MCP_VARIABLE.finditer(text)]


# `${VAR}` and `${VAR:-default}` in an MCP server's settings: the person's variables, as in
# Claude Code (mcp_tools/servers.py fills them in; the trust question names them).
MCP_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


# What an untrusted lily.yaml may do with a key (`spec(untrusted=...)`, trust/settings.py
# applies it): `fixed`, nothing; `local`, name the embedded model only; `lower`, lower it
# but not raise it (nor set one where there is none); `on`, turn it on but not off; `off`,
# turn it off but not on; `fewer`, drop names but add none. Keys without one apply.
FIXED, LOCAL_ONLY, LOWER, ON_ONLY, OFF_ONLY, FEWER = "fixed", "local", "lower", "on", "off", \
    "fewer"


def _limit(*, gt: float | None = None, ge: float | None = None, le: float | None = None,
           litellm: bool = False) -> dict[str, Any]:
    """A number an untrusted lily.yaml may lower but not raise."""
    return spec(untrusted=LOWER, why="more than without the file", gt=gt, ge=ge, le=le,
                litellm=litellm)


@dataclass(frozen=True)
class NetworkConfig:
    """Hosts sandboxed code may reach through the proxy (entries: host_patterns.py):
    `allow` unasked, `deny` never (it wins); others are asked (network/policy.py)."""

    allow: tuple[str, ...] = field(default=(), metadata=spec(
        env_list="names", untrusted=FEWER, label="network.allow",
        why="hosts the code could send workspace data to without asking"))
    deny: tuple[str, ...] = field(default=(), metadata=spec(env_list="names"))


@dataclass(frozen=True)
class ModelConfig:
    """How to reach the model; `model` None means none is configured. These keys sit at
    the top level of lily.yaml; the session holds this very object."""

    model: str | None = field(default=None, metadata=spec(
        untrusted=LOCAL_ONLY, why="would send the conversation elsewhere"))
    api_base: str | None = field(default=None, metadata=spec(
        untrusted=FIXED, why="sends requests (and keys) to another server", litellm=True))
    temperature: float | None = field(default=None, metadata=spec(ge=0, le=2, litellm=True))
    max_tokens: int | None = field(default=None, metadata=_limit(gt=0, litellm=True))
    request_timeout: float = field(default=60.0, metadata=spec(gt=0))
    retries: int = field(default=2, metadata=_limit(ge=0, le=10))
    retry_backoff: float = field(default=0.5, metadata=spec(ge=0, le=60))
    stream: bool = True
    max_steps: int = field(default=8, metadata=_limit(ge=1, le=100))
    # Tokens the model reads at most (None: the model's own, where known).
    context_window: int | None = field(default=None, metadata=_limit(ge=256))
    # A one-line footer under each answer: model, tokens, share of the window, cost.
    footer: bool = True
    # CPU threads a local model uses (None: the cores this process may use, at most 4).
    local_threads: int | None = field(default=None, metadata=_limit(ge=1, le=256))
    # Whether the model calls tools (None: as litellm knows it, a model it does not know
    # calling them). `false` for a server that does not (many local ones): its answer's
    # fenced python block runs instead (docs/execution.md). The embedded model never does.
    tool_calls: bool | None = None

    @property
    def is_local(self) -> bool:
        """Run in-process by llama.cpp (it cannot call tools), not through litellm."""
        return is_local_model(self.model)


_OUTSIDE = "a folder outside this workspace"
_ROOT = "a skills root a downloaded folder would choose"


@dataclass(frozen=True)
class LilyConfig:
    """Every setting Lily reads; the field names are the lily.yaml keys."""

    # Skills roots (None = the default for that root).
    skills_workspace_dir: Path | None = field(default=None, metadata=spec(
        untrusted=FIXED, why=_ROOT, folder="workspace"))
    skills_user_dir: Path | None = field(default=None, metadata=spec(
        untrusted=FIXED, why=_OUTSIDE, folder="person"))
    skills_bundled_dir: Path | None = field(default=None, metadata=spec(
        untrusted=FIXED, why=_OUTSIDE, folder="person"))
    # More skills roots, below the user's and above the bundled ones, in order
    # (LILY_SKILLS_EXTRA_DIRS: separated by `:` like PATH).
    skills_extra_dirs: tuple[str, ...] = field(default=(), metadata=spec(
        untrusted=FIXED, why=_ROOT, folder="person", env_list="paths"))
    # Read the skills folders other agents keep (`.agents/skills`, `.claude/skills`, in
    # the workspace and the home folder) beside Lily's own.
    skills_other_agents: bool = field(default=True, metadata=spec(
        untrusted=OFF_ONLY, why="reading other agents' skills folders"))
    # The user's own Lily folder (user skills and persona default under it).
    home: Path | None = field(default=None, metadata=spec(
        untrusted=FIXED, why=f"{_OUTSIDE} (where trust is kept)", folder="person"))
    agent: str = "default"
    persona_max_chars: int = field(default=20_000, metadata=_limit(gt=0))
    tools: ToolsConfig = ToolsConfig()
    event_log: bool = field(default=True, metadata=spec(
        untrusted=ON_ONLY, why="turning the session log off"))
    catalog_max_chars: int = field(default=30_000, metadata=_limit(gt=0))
    # Variables a skill script sees besides PATH, HOME, the locale and the like (names).
    script_env: tuple[str, ...] = field(default=(), metadata=spec(
        untrusted=FEWER, why="variables passed to skill scripts", env_list="names"))
    # A skill script's or a shell command's time limit, in seconds.
    script_timeout: float = field(default=120.0, metadata=_limit(gt=0, le=86_400))
    # The memory a sandboxed run may take, in MiB (docs/execution.md, Limits).
    memory_limit_mb: int = field(default=4096, metadata=_limit(ge=64, le=1_048_576))
    # `auto`: the tools asked by default run without asking. Only the person sets it.
    policy: Profile = field(default="ask", metadata=spec(
        untrusted=FIXED, why="would let the model run code without asking"))
    # The kernel the `python` tool and `/python` run in: a kernelspec name, or an
    # environment's folder or interpreter (None: Lily's own Python). execution/kernelspec.py.
    python_kernel: str | None = field(default=None, metadata=spec(
        untrusted=FIXED, why="chooses the interpreter the model's code runs in"))
    # A Python run's time limit, in seconds (the kernel is interrupted; its state stays).
    python_timeout: float = field(default=600.0, metadata=_limit(gt=0, le=86_400))
    # MCP servers whose tools the model may use (`mcp__<server>__<tool>`), by name; the
    # person's own are in `<home>/mcp.json` (mcp_tools/servers.py).
    mcp_servers: dict[str, McpServerConfig] = field(default_factory=dict, metadata=spec(
        untrusted=FIXED, why="starts the programs and contacts the servers it names"))
    # A recorded chat cell (docs/sessions.md): answered from the record (`replay`) or by
    # the model (`fresh`). No untrusted rule: neither does more than Lily without the file.
    answers: Literal["replay", "fresh"] = "replay"
    network: NetworkConfig = NetworkConfig()  # hosts sandboxed code may reach
    # The model keys (model, api_base, temperature, ...), flat in lily.yaml.
    llm: ModelConfig = field(default=ModelConfig(), metadata=spec(flat=True))


def _keys_where(name: str, value: Any = True) -> frozenset[str]:
    """The keys whose `spec` says `name` is `value` (config keys are their attributes)."""
    return frozenset(f.name for f in fields(LilyConfig)
                     if f.metadata.get("lily", {}).get(name) == value)


_PATH_KEYS = _keys_where("folder", "person") | _keys_where("folder", "workspace")
_PATH_LISTS = _keys_where("env_list", "paths")
_NAME_LISTS = _keys_where("env_list", "names")
# The person's own folders (not the workspace's skills root, relative to it by design).
_PERSONS_FOLDERS = _keys_where("folder", "person")
LITELLM_KEYS = tuple(f.name for f in fields(ModelConfig)
                     if f.metadata.get("lily", {}).get("litellm"))
_ENV_TOOLS = {f"LILY_TOOLS_{f.name.upper()}": f.name for f in fields(ToolsConfig)}
_ENV_NETWORK = {f"LILY_NETWORK_{f.name.upper()}": f.name for f in fields(NetworkConfig)}
_MODEL_KEYS = frozenset(key for _, key, _ in field_keys(ModelConfig))


@dataclass(frozen=True)
class ConfigFile:
    """A workspace's lily.yaml as read once: its keys, and the sha256 of the very bytes
    they were parsed from (what trust compares: a file swapped between a parse and a
    second read for the digest is no cover). Empty with no digest when there is none."""

    data: dict[str, Any] = field(default_factory=dict)
    digest: str | None = None


def read_config_file(workspace: Path) -> ConfigFile:
    """`<workspace>/lily.yaml`, read and parsed (raises ConfigError). Anything at that
    name but nothing at all is read: a folder, a dangling link, a FIFO are reported like
    any broken lily.yaml, never ignored (and a FIFO never opened: it would block)."""
    path = workspace / CONFIG_FILE
    if not os.path.lexists(path):
        return ConfigFile()
    if not path.is_file():
        what = ("a folder" if path.is_dir() else "not a regular file" if path.exists()
                else "a link that leads nowhere")
        raise ConfigError(f"{path}: cannot read the file (it is {what}).")
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the file ({exc}).") from exc
    if not raw:  # empty says nothing (the sandbox's placeholder: execution/mounts.py)
        return ConfigFile()
    import yaml  # here, not at the top: most workspaces have no lily.yaml

    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}".rstrip(".") + ".") from exc
    if data is not None and not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys to values.")
    return ConfigFile(data or {}, hashlib.sha256(raw).hexdigest())


def _parse_list(kind: str, text: str) -> list[str]:
    """A list key written as one string, the way its variable writes it: `paths`
    separated like PATH, `names` by commas (`*` is a name, every tool in `tools.*`)."""
    if kind == "paths":
        return [part for part in text.split(os.pathsep) if part.strip()]
    return [part.strip() for part in text.split(",") if part.strip()]


def _lists_read_one_way(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """`data` with each list key (`spec(env_list=...)`) given as one string read as its
    variable is: in lily.yaml as in LILY_*, `ask: shell` is `ask: [shell]` and
    `allow: "*"` is `allow: ["*"]`; a nested mapping (`tools`) alike."""
    read = dict(data)
    hints = typing.get_type_hints(cls)
    for f in fields(cls):
        kind, value = f.metadata.get("lily", {}).get("env_list"), read.get(f.name)
        if kind and isinstance(value, str):
            read[f.name] = _parse_list(kind, value)
        elif is_dataclass(hints[f.name]) and isinstance(value, dict):
            read[f.name] = _lists_read_one_way(hints[f.name], value)
    return read


def _absolute(var: str, key: str, text: str) -> None:
    """A folder named by a variable is the person's own: a relative one (`.lily`,
    `team-skills`) would be relative to each notebook's folder, which a downloaded folder
    controls (its own trust store, or its skills taken for the person's own roots)."""
    for part in text.split(os.pathsep):
        if part.strip() and not Path(part.strip()).expanduser().is_absolute():
            raise ConfigError(f"{var}: key '{key}': expected an absolute path (got {part!r}); "
                              "a relative one would be relative to each notebook's folder.")


def _env_overrides(environ: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings found in the environment, and which variable set each key.

    Every scalar key is readable as LILY_<KEY>; `tools.*` has its own pair of variables.
    """
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    owners = {key: (ModelConfig if key in _MODEL_KEYS else LilyConfig, attr)
              for attr, key, _ in field_keys(LilyConfig)}
    for key, (owner, attr) in owners.items():
        var = f"LILY_{key.upper()}"
        if var in environ and key in _PERSONS_FOLDERS:
            _absolute(var, key, environ[var])
        if var in environ and key in _PATH_LISTS | _NAME_LISTS:
            values[key] = environ[var]  # split as a string in lily.yaml is
            origin[key] = var
        elif var in environ and key not in ("tools", "network"):
            values[key] = parse_text(owner, attr, environ[var])
            origin[key] = var
    tools: dict[str, Any] = {}
    for var, key in _ENV_TOOLS.items():
        if var in environ:
            tools[key] = environ[var]
            origin[f"tools.{key}"] = var
    if tools:
        values["tools"] = tools
    if network := {key: environ[var] for var, key in _ENV_NETWORK.items() if var in environ}:
        values["network"] = network
        origin.update({f"network.{k}": f"LILY_NETWORK_{k.upper()}" for k in network})
    return values, origin


def _blank_is_unset(value: str | None) -> str | None:
    return (value.strip() or None) if value is not None else None


def load_config(workspace: Path, environ: Mapping[str, str] | None = None,
                read_file: bool = True, file: ConfigFile | None = None) -> LilyConfig:
    """The configuration: `<workspace>/lily.yaml` (`file` as already read, else read now
    when `read_file`) overlaid by the LILY_* variables."""
    environ = os.environ if environ is None else environ
    path = workspace / CONFIG_FILE
    if file is None:
        file = read_config_file(workspace) if read_file else ConfigFile()
    data = file.data
    env_values, env_origin = _env_overrides(environ)
    merged = dict(data)
    for key, value in env_values.items():
        if key in ("tools", "network") and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    try:
        config = build(LilyConfig, _lists_read_one_way(LilyConfig, merged),
                       forbid_unknown=True)
    except ShapeError as exc:
        top = exc.key.split(".")[0]
        where = env_origin.get(exc.key) or env_origin.get(top) or str(path)
        problem = exc.problem
        if where.startswith("LILY_") and not exc.unknown and isinstance(exc.value, str):
            problem = f"expected {exc.expected} (got {exc.value!r})"
        raise ConfigError(f"{where}: key '{exc.key}': {problem}.") from None
    for key in ("allow", "deny"):  # each entry names hosts (host_patterns.py)
        if (bad := bad_host_entry(getattr(config.network, key))) is not None:
            where = env_origin.get(f"network.{key}") or str(path)
            raise ConfigError(f"{where}: key 'network.{key}': {bad}.")
    if not config.agent or "/" in config.agent or config.agent.startswith("."):
        where = env_origin.get("agent") or str(path)
        raise ConfigError(f"{where}: key 'agent': must be a plain folder name.")
    llm = replace(config.llm, model=_blank_is_unset(config.llm.model),
                  api_base=_blank_is_unset(config.llm.api_base))
    return replace(config, llm=llm, **_resolved_paths(config, workspace))


def _resolved_paths(config: LilyConfig, workspace: Path) -> dict[str, Any]:
    """Every folder key (`spec(folder=...)`) resolved: relative to the workspace, `~`
    expanded; a list of them, each."""
    updates: dict[str, Any] = {}
    for key in sorted(_PATH_KEYS):
        value = getattr(config, key)
        if key in _PATH_LISTS:
            updates[key] = tuple(str(resolved_path(p, workspace)) for p in value)
        else:
            updates[key] = resolved_path(value, workspace) if value is not None else None
    return updates


def resolved_path(value: str | Path, workspace: Path) -> Path:
    """A configured path: `~` expanded, relative to the workspace."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else workspace / path
