"""Build a frozen dataclass from an untrusted mapping (YAML, environment), with plain typed checks.

A concept is described once, as a dataclass: each field's type says what its key accepts,
its metadata (`spec(...)`) the key's spelling when it differs from the attribute
(`allowed-tools`), numeric bounds, and whether its sub-fields sit flat in the parent
mapping. `build` reads that description; nothing else restates it. The checks are
strict, as YAML types are (a quoted `'3'` is not an integer); text from environment
variables is converted first by `parse_text`.

Supported field types: str, int, float (an int is accepted), bool, Path (from a string),
None, Literal[...], an Enum of strings (a StrEnum, from its value), tuple[str, ...] and
list[str] (from a list), list[dict[str, Any]], dict[str, Any] (string keys),
dict[str, str], Any, a nested dataclass (from a mapping), a list of one dataclass
(`list[Step]`), a mapping of names to one dataclass (`dict[str, Server]`), and unions of
these. The
event log's kinds (events.py) are read back with it too, by replay.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

__all__ = ["ShapeError", "build", "check_fields", "field_keys", "field_spec", "parse_text",
           "spec"]

T = TypeVar("T")

_SPEC = "lily"


def spec(
    *,
    key: str | None = None,
    gt: float | None = None,
    ge: float | None = None,
    le: float | None = None,
    flat: bool = False,
    label: str | None = None,
    untrusted: str | None = None,
    why: str = "",
    folder: str | None = None,
    env_list: str | None = None,
    litellm: bool = False,
) -> dict[str, Any]:
    """Field metadata: `field(default=..., metadata=spec(key="allowed-tools"))`.

    `label` is how people see the field (e.g. in `/help`); it defaults to the key.
    `untrusted` says what a file the person has not trusted may do with the key, and
    `why` what the change would do (trust/settings.py reads both). For a configuration
    key: `folder`, a path resolved from the workspace (`"person"`: the person's own, so
    its variable must give it absolute; `"workspace"`: the workspace's); `env_list`, how
    its LILY_ variable is split (`"paths"` like PATH, `"names"` by commas); `litellm`,
    passed to litellm as it is when set.
    """
    return {_SPEC: {"key": key, "gt": gt, "ge": ge, "le": le, "flat": flat, "label": label,
                    "untrusted": untrusted, "why": why, "folder": folder,
                    "env_list": env_list, "litellm": litellm}}


def field_spec(cls: type, attr: str) -> dict[str, Any]:
    """The `spec(...)` of one field of the dataclass `cls` ({} when it has none)."""
    found: dict[str, Any] = cls.__dataclass_fields__[attr].metadata.get(_SPEC, {})  # type: ignore[attr-defined]
    return found


class ShapeError(ValueError):
    """A value does not fit its description: which key, what was expected, what came."""

    def __init__(self, key: str, expected: str, value: Any, *, unknown: bool = False,
                 missing: bool = False) -> None:
        self.key = key
        self.expected = expected
        self.value = value
        self.unknown = unknown
        self.missing = missing
        super().__init__(f"key '{key}': {self.problem}")

    @property
    def got(self) -> str:
        """What came instead, by its YAML-level type name."""
        return type(self.value).__name__

    @property
    def problem(self) -> str:
        if self.unknown:
            return "unknown key"
        if self.missing:
            return "required but missing"
        return f"expected {self.expected} (got {self.got})"


Check = Callable[[Any, str], Any]  # (value, key for messages) -> the converted value


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    attr: str
    key: str
    label: str
    check: Check
    flat: type | None  # a dataclass whose keys sit in the parent mapping
    required: bool  # no default: the key must be present


def _scalar(kind: type, expected: str) -> Check:
    def check(value: Any, key: str) -> Any:
        if type(value) is kind:
            return value
        raise ShapeError(key, expected, value)
    return check


def _number(value: Any, key: str) -> Any:
    if type(value) in (int, float):
        return float(value)
    raise ShapeError(key, "a number", value)


def _path(value: Any, key: str) -> Any:
    if type(value) is str:
        return Path(value)
    raise ShapeError(key, "a path (a string)", value)


def _strings(value: Any, key: str) -> Any:
    if type(value) is list or type(value) is tuple:
        for index, item in enumerate(value):
            if type(item) is not str:
                raise ShapeError(f"{key}.{index}", "a string", item)
        return tuple(value)
    raise ShapeError(key, "a list of strings", value)


def _string_list(value: Any, key: str) -> Any:
    if type(value) is list:
        return list(_strings(value, key))
    raise ShapeError(key, "a list of strings", value)


def _mapping(value: Any, key: str) -> Any:
    if type(value) is dict:
        for item in value:
            if type(item) is not str:
                raise ShapeError(f"{key}.{item}", "a string key", item)
        return value
    raise ShapeError(key, "a mapping", value)


def _mappings(value: Any, key: str) -> Any:
    if type(value) is list:
        for index, item in enumerate(value):
            _mapping(item, f"{key}.{index}")
        return value
    raise ShapeError(key, "a list of mappings", value)


def _string_mapping(value: Any, key: str) -> Any:
    if type(value) is dict:
        for name, item in _mapping(value, key).items():
            if type(item) is not str:
                raise ShapeError(f"{key}.{name}", "a string", item)
        return value
    raise ShapeError(key, "a mapping of strings", value)


def _anything(value: Any, key: str) -> Any:
    return value


_SCALARS: dict[Any, tuple[Check, str]] = {
    str: (_scalar(str, "a string"), "a string"),
    int: (_scalar(int, "an integer"), "an integer"),
    bool: (_scalar(bool, "true or false"), "true or false"),
    float: (_number, "a number"),
    Path: (_path, "a path"),
    tuple[str, ...]: (_strings, "a list of strings"),
    list[str]: (_string_list, "a list of strings"),
    list[dict[str, Any]]: (_mappings, "a list of mappings"),
    dict[str, Any]: (_mapping, "a mapping"),
    dict[str, str]: (_string_mapping, "a mapping of strings"),
    Any: (_anything, "anything"),
}


def _choices(hint: Any) -> tuple[str, ...] | None:
    """The strings a Literal or an Enum of strings accepts (None: it is neither)."""
    if typing.get_origin(hint) is Literal:
        return typing.get_args(hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return tuple(member.value for member in hint)
    return None


def _describe(hint: Any) -> str:
    if hint in _SCALARS:
        return _SCALARS[hint][1]
    choices = _choices(hint)
    if choices is not None:
        return "one of " + ", ".join(repr(v) for v in choices)
    if dataclasses.is_dataclass(hint):
        return "a mapping"
    if typing.get_origin(hint) is list:
        return "a list of mappings"
    return str(hint)


def _check_for(hint: Any) -> Check:
    if hint in _SCALARS:
        return _SCALARS[hint][0]
    origin = typing.get_origin(hint)
    choices = _choices(hint)
    if choices is not None:
        # An Enum's value is read as its member; a Literal's as the string.
        read = hint if isinstance(hint, type) else str
        expected = _describe(hint)

        def choice(value: Any, key: str) -> Any:
            if isinstance(value, str) and value in choices:
                return read(value)
            raise ShapeError(key, expected, value)
        return choice
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(options) < len(typing.get_args(hint))
        checks = [_check_for(a) for a in options]
        named = [_choices(a) for a in options]
        expected = (" or ".join(_describe(a) for a in options) if None in named else
                    "one of " + ", ".join(repr(v) for c in named if c for v in c))

        def union(value: Any, key: str) -> Any:
            if value is None and optional:
                return None
            for check in checks:
                try:
                    return check(value, key)
                except ShapeError as exc:
                    if exc.key != key:  # it had the right shape; an item inside is wrong
                        raise
            raise ShapeError(key, expected, value)
        return union
    if origin is dict and dataclasses.is_dataclass(typing.get_args(hint)[1]):
        item = _check_for(typing.get_args(hint)[1])

        def by_name(value: Any, key: str) -> Any:
            return {name: item(entry, f"{key}.{name}")
                    for name, entry in _mapping(value, key).items()}
        return by_name
    if origin is list and dataclasses.is_dataclass(typing.get_args(hint)[0]):
        each = _check_for(typing.get_args(hint)[0])

        def items(value: Any, key: str) -> Any:
            if type(value) is not list:
                raise ShapeError(key, "a list of mappings", value)
            return [each(entry, f"{key}.{index}") for index, entry in enumerate(value)]
        return items
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        cls = hint

        def nested(value: Any, key: str) -> Any:
            if type(value) is not dict:
                raise ShapeError(key, "a mapping", value)
            # Unknown keys inside are errors unless the class says `unknown_keys = "ignore"`.
            forbid = getattr(cls, "unknown_keys", "forbid") != "ignore"
            return build(cls, value, forbid_unknown=forbid, prefix=f"{key}.")
        return nested
    raise TypeError(f"validation: unsupported field type {hint!r}")


@functools.cache
def _fields(cls: Any) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls)
    found = []
    for f in dataclasses.fields(cls):
        meta = f.metadata.get(_SPEC, {})
        key = meta.get("key") or f.name
        flat = hints[f.name] if meta.get("flat") else None
        check = _anything if flat else _check_for(hints[f.name])
        bounded = _bounded(check, meta) if any(meta.get(b) is not None
                                               for b in ("gt", "ge", "le")) else check
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        found.append(_Field(f.name, key, meta.get("label") or key, bounded, flat, required))
    return tuple(found)


def _bounded(check: Check, meta: dict[str, Any]) -> Check:
    gt, ge, le = meta.get("gt"), meta.get("ge"), meta.get("le")

    def bounded(value: Any, key: str) -> Any:
        value = check(value, key)
        if value is None:
            return None
        if gt is not None and not value > gt:
            raise ShapeError(key, f"a value greater than {gt:g}", value)
        if ge is not None and not value >= ge:
            raise ShapeError(key, f"a value of at least {ge:g}", value)
        if le is not None and not value <= le:
            raise ShapeError(key, f"a value of at most {le:g}", value)
        return value
    return bounded


@functools.cache
def field_keys(cls: type) -> tuple[tuple[str, str, str], ...]:
    """(attribute, key, label) of each key `cls` reads, flat sub-fields included, in order."""
    keys: list[tuple[str, str, str]] = []
    for f in _fields(cls):
        if f.flat is not None:
            keys.extend(field_keys(f.flat))
        else:
            keys.append((f.attr, f.key, f.label))
    return tuple(keys)


def _known(cls: Any) -> frozenset[str]:
    return frozenset(key for _, key, _ in field_keys(cls))


def build(cls: type[T], data: Mapping[str, Any], *, forbid_unknown: bool = False,
          prefix: str = "") -> T:
    """An instance of the dataclass `cls` from `data`; raises ShapeError on the first
    problem. Absent keys take the field's default; unknown keys are ignored, or refused
    with `forbid_unknown`."""
    return cls(**_values(cls, data, forbid_unknown, prefix, complete=True))


def check_fields(cls: type, data: Mapping[str, Any]) -> None:
    """Check the keys of `data` the dataclass `cls` declares, as `build` would, where a
    missing key is no problem (a recorded event's reader decides about those); raises
    ShapeError on the first problem."""
    _values(cls, data, False, "", complete=False)


def _values(cls: Any, data: Mapping[str, Any], forbid_unknown: bool, prefix: str, *,
            complete: bool) -> dict[str, Any]:
    """The values of `data` by attribute, checked and converted; with `complete`, a
    required key missing is a problem too."""
    if forbid_unknown:
        known = _known(cls)
        for key in data:
            if key not in known:
                raise ShapeError(f"{prefix}{key}", "", data[key], unknown=True)
    values: dict[str, Any] = {}
    for f in _fields(cls):
        if f.flat is not None:
            values[f.attr] = build(f.flat, {k: v for k, v in data.items()
                                            if k in _known(f.flat)}, prefix=prefix)
        elif f.key in data:
            values[f.attr] = f.check(data[f.key], prefix + f.key)
        elif f.required and complete:
            raise ShapeError(prefix + f.key, "", None, missing=True)
    return values


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def parse_text(cls: type, attr: str, text: str) -> Any:
    """An environment variable's text as the type field `attr` of `cls` expects; text
    that does not convert is returned unchanged, for `build` to report."""
    hint = typing.get_type_hints(cls)[attr]
    options = typing.get_args(hint) if typing.get_origin(hint) in (
        typing.Union, types.UnionType) else (hint,)
    stripped = text.strip()
    if type(None) in options and not stripped:
        return None
    for option in options:
        try:
            if option is bool and stripped.lower() in _TRUE | _FALSE:
                return stripped.lower() in _TRUE
            if option is int:
                return int(stripped)
            if option is float:
                return float(stripped)
        except ValueError:
            continue
    return text
