"""Lily's configuration: optional `<workspace>/lily.yaml` overlaid by LILY_* variables.

Precedence, highest first: environment variable > lily.yaml > default. Every value is
validated by pydantic; an unknown key or a bad value raises `ConfigError` naming the
file (or variable), the key and the problem.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lily_kernel.errors import ConfigError

__all__ = ["CONFIG_FILE", "LilyConfig", "ToolsConfig", "load_config"]

CONFIG_FILE = "lily.yaml"

_YamlLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ToolsConfig(BaseModel):
    """Tool policy: `allow` is `*` or a list of names; `ask` needs the person's yes for
    each call; `deny` always wins."""

    model_config = ConfigDict(extra="forbid")

    allow: Literal["*"] | list[str] = "*"
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)


class LilyConfig(BaseModel):
    """Every setting Lily reads; the field names are the lily.yaml keys."""

    model_config = ConfigDict(extra="forbid")

    # Skills roots (None = the default for that root).
    skills_workspace_dir: Path | None = None
    skills_user_dir: Path | None = None
    skills_bundled_dir: Path | None = None
    # The user's own Lily folder (user skills and persona default under it).
    home: Path | None = None
    agent: str = "default"
    persona_max_chars: int = Field(20_000, gt=0)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    event_log: bool = True
    # Model.
    model: str | None = None
    api_base: str | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    max_tokens: int | None = Field(None, gt=0)
    request_timeout: float = Field(60.0, gt=0)
    retries: int = Field(2, ge=0, le=10)
    retry_backoff: float = Field(0.5, ge=0, le=60)
    stream: bool = True
    max_steps: int = Field(8, ge=1, le=100)
    catalog_max_chars: int = Field(30_000, gt=0)
    # A skill script's time limit, in seconds.
    script_timeout: float = Field(120.0, gt=0, le=86_400)

    @field_validator("model", "api_base")
    @classmethod
    def _blank_is_unset(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    @field_validator("agent")
    @classmethod
    def _agent_name(cls, value: str) -> str:
        if not value or "/" in value or value.startswith("."):
            raise ValueError("must be a plain folder name")
        return value


# Scalar keys readable from the environment as LILY_<KEY>; tools.* has its own pair.
_ENV_KEYS = [name for name in LilyConfig.model_fields if name != "tools"]
_ENV_TOOLS = {"LILY_TOOLS_ALLOW": "allow", "LILY_TOOLS_ASK": "ask", "LILY_TOOLS_DENY": "deny"}


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the file ({exc}).") from exc
    try:
        data = yaml.load(text, Loader=_YamlLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}".rstrip(".") + ".") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys to values.")
    return data


def _split_list(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _env_overrides(environ: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings found in the environment, and which variable set each key."""
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for key in _ENV_KEYS:
        var = f"LILY_{key.upper()}"
        if var in environ:
            values[key] = environ[var]
            origin[key] = var
    tools: dict[str, Any] = {}
    for var, key in _ENV_TOOLS.items():
        if var in environ:
            raw = environ[var].strip()
            tools[key] = "*" if raw == "*" and key == "allow" else _split_list(raw)
            origin[f"tools.{key}"] = var
    if tools:
        values["tools"] = tools
    return values, origin


def _describe(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc)


def load_config(workspace: Path, environ: Mapping[str, str] | None = None) -> LilyConfig:
    """Read `<workspace>/lily.yaml` (if present) and the LILY_* variables."""
    environ = os.environ if environ is None else environ
    path = workspace / CONFIG_FILE
    data = _read_yaml(path) if path.is_file() else {}
    env_values, env_origin = _env_overrides(environ)
    merged = dict(data)
    for key, value in env_values.items():
        if key == "tools" and isinstance(merged.get("tools"), dict):
            merged["tools"] = {**merged["tools"], **value}
        else:
            merged[key] = value
    try:
        config = LilyConfig.model_validate(merged)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            key = _describe(error["loc"])
            top = str(error["loc"][0]) if error["loc"] else ""
            where = env_origin.get(key) or env_origin.get(top) or str(path)
            message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
            problems.append(f"{where}: key '{key}': {message}.")
        raise ConfigError(" ".join(problems)) from exc
    return _resolve_paths(config, workspace)


def _resolve_paths(config: LilyConfig, workspace: Path) -> LilyConfig:
    """Relative paths in the config are relative to the workspace; `~` is expanded."""
    updates = {}
    for key in ("skills_workspace_dir", "skills_user_dir", "skills_bundled_dir", "home"):
        value = getattr(config, key)
        if value is not None:
            value = value.expanduser()
            updates[key] = value if value.is_absolute() else workspace / value
    return config.model_copy(update=updates)
