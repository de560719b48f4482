"""Parse SKILL.md bytes into frontmatter and body; pure, never executes anything.

The frontmatter is YAML between `---` lines at the very top (CRLF and a UTF-8 BOM are
accepted) and is read with `yaml.safe_load`'s C loader when available. Recognised keys
are validated strictly by pydantic; unknown keys are kept for `/help`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lily_kernel.skills.models import Eligibility

__all__ = [
    "KNOWN_OS",
    "MAX_SKILL_BYTES",
    "SkillDocument",
    "SkillFormatError",
    "SkillFrontmatter",
    "parse_allowed_tools",
    "parse_skill_document",
]

MAX_SKILL_BYTES = 256 * 1024
KNOWN_OS = ("darwin", "linux", "win32")
INVOCATION_MODES = ("prompt_rewrite", "tool_dispatch")

_NO_CONDITIONS = Eligibility()
_BOM = b"\xef\xbb\xbf"
_STR_TAG = "tag:yaml.org,2002:str"


class _SafeLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """yaml.safe_load's loader (C parser when present), with one shortcut.

    A plain string scalar constructs to `node.value` in SafeConstructor, and a mapping
    with plain string keys to the dict of its pairs; building those directly skips the
    generic dispatch that dominates frontmatter loading (nearly every node is one of
    them). Every other node goes through SafeConstructor unchanged.
    """

    def resolve(self, kind: type, value: str, implicit: tuple[bool, bool]) -> str:
        # PyYAML's resolve, for scalars, without building a list per call; exact because
        # the safe loader has no wildcard or path resolvers (asserted below the class).
        if kind is yaml.ScalarNode:
            if implicit[0]:
                for tag, regexp in self.yaml_implicit_resolvers.get(value[:1], ()):
                    if regexp.match(value):
                        return tag  # type: ignore[no-any-return]
            return _STR_TAG
        return super().resolve(kind, value, implicit)  # type: ignore[no-any-return]

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        if node.tag == _STR_TAG and type(node) is yaml.ScalarNode:
            return node.value
        return super().construct_object(node, deep)

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        # Plain string keys rule out merge keys (`<<` resolves to another tag), so the
        # generic path's merge flattening and hashability checks have nothing to do.
        if type(node) is yaml.MappingNode and all(
            key.tag == _STR_TAG and type(key) is yaml.ScalarNode for key, _ in node.value
        ):
            return {key.value: self.construct_object(value, deep) for key, value in node.value}
        return super().construct_mapping(node, deep)  # type: ignore[no-any-return]

_CLOSING_FENCE = re.compile(r"^---[ \t]*$", re.MULTILINE)
# A tool entry in `allowed-tools`: a name, optionally followed by `(pattern)`.
_TOOL_ENTRY = re.compile(r"[^\s,()]+(?:\([^)]*\))?")


class SkillFormatError(ValueError):
    """The SKILL.md cannot be used; the message is the human reason."""


class _EligibilityBlock(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    os: list[str] = Field(default_factory=list)
    env: list[str] = Field(default_factory=list)
    binaries: list[str] = Field(default_factory=list)


class SkillFrontmatter(BaseModel):
    """The recognised keys of a SKILL.md frontmatter, strictly typed."""

    model_config = ConfigDict(strict=True, extra="ignore", populate_by_name=True)

    summary: str | None = None
    description: str | None = None
    name: str | None = None
    invocation_mode: str = "prompt_rewrite"
    command: str | None = None
    command_tool: str | None = None
    requires_tools: list[str] = Field(default_factory=list)
    eligibility: _EligibilityBlock | None = None
    allowed_tools: str | list[str] | None = Field(None, alias="allowed-tools")
    license: str | None = None
    compatibility: str | None = None
    metadata: dict[str, Any] | None = None
    disable_model_invocation: bool = Field(False, alias="disable-model-invocation")


assert None not in _SafeLoader.yaml_implicit_resolvers and not _SafeLoader.yaml_path_resolvers

_KNOWN_KEYS = frozenset(
    (f.alias or name) for name, f in SkillFrontmatter.model_fields.items()
)


class _OpenClawRequires(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    bins: list[str] = Field(default_factory=list)
    anyBins: list[str] = Field(default_factory=list)  # noqa: N815 - OpenClaw's key
    env: list[str] = Field(default_factory=list)


class _OpenClawBlock(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    os: list[str] = Field(default_factory=list)
    requires: _OpenClawRequires = Field(default_factory=_OpenClawRequires)


@dataclass(frozen=True)
class SkillDocument:
    """A parsed SKILL.md: validated frontmatter, unknown keys, derived eligibility, body."""

    frontmatter: SkillFrontmatter
    eligibility: Eligibility
    allowed_tools: tuple[str, ...] | None
    body: str
    extra: dict[str, Any] = field(default_factory=dict)


def _split(text: str) -> tuple[str | None, str]:
    """Frontmatter text (None when absent) and body, slicing `text` only once each."""
    if not text.startswith("---"):
        return None, text
    first_end = text.find("\n")
    if first_end == -1 or text[:first_end].rstrip() != "---":
        return None, text
    closing = _CLOSING_FENCE.search(text, first_end + 1)
    if closing is None:
        raise SkillFormatError("the frontmatter opens with '---' but is never closed")
    body_start = closing.end() + 1 if text.startswith("\n", closing.end()) else closing.end()
    return text[first_end + 1 : closing.start()], text[body_start:]


def _load_yaml(source: str) -> dict[str, Any]:
    try:
        data = yaml.load(source, Loader=_SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        where = f" at line {mark.line + 2}" if mark is not None else ""
        raise SkillFormatError(f"invalid YAML frontmatter{where}: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SkillFormatError(
            f"the frontmatter is not a mapping (it is a YAML {type(data).__name__})"
        )
    return data


def _type_problem(exc: ValidationError, prefix: str = "") -> SkillFormatError:
    error = exc.errors()[0]
    key = prefix + ".".join(str(part) for part in error["loc"])
    got = type(error.get("input")).__name__
    return SkillFormatError(f"key '{key}' has the wrong type: {error['msg']} (got {got})")


def parse_allowed_tools(value: str | list[str] | None) -> tuple[str, ...] | None:
    """`allowed-tools` as tool names: space- or comma-separated string, or a list.

    `Bash(git:*)`-style argument patterns are kept whole; matching uses the name part.
    """
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    return tuple(entry for item in items for entry in _TOOL_ENTRY.findall(item))


def _check_os(values: list[str], key: str) -> None:
    for value in values:
        if value not in KNOWN_OS:
            raise SkillFormatError(
                f"key '{key}' names an unknown os '{value}' (expected one of "
                f"{', '.join(KNOWN_OS)})"
            )


def _eligibility(front: SkillFrontmatter) -> Eligibility:
    """Lily's `eligibility` merged with OpenClaw's `metadata.openclaw` conditions."""
    raw = (front.metadata or {}).get("openclaw")
    if front.eligibility is None and raw is None:
        return _NO_CONDITIONS
    block = front.eligibility or _EligibilityBlock()
    _check_os(block.os, "eligibility.os")
    os_list, env, bins, any_bins = list(block.os), list(block.env), list(block.binaries), []
    if raw is not None:
        if not isinstance(raw, dict):
            raise SkillFormatError("key 'metadata.openclaw' must be a mapping")
        try:
            claw = _OpenClawBlock.model_validate(raw)
        except ValidationError as exc:
            raise _type_problem(exc, "metadata.openclaw.") from None
        _check_os(claw.os, "metadata.openclaw.os")
        os_list += claw.os
        env += claw.requires.env
        bins += claw.requires.bins
        any_bins += claw.requires.anyBins
    return Eligibility(
        os=tuple(dict.fromkeys(os_list)),
        env=tuple(dict.fromkeys(env)),
        binaries=tuple(dict.fromkeys(bins)),
        any_binaries=tuple(dict.fromkeys(any_bins)),
    )


def parse_skill_document(data: bytes) -> SkillDocument:
    """Parse SKILL.md bytes; raise SkillFormatError with the reason when unusable."""
    if len(data) > MAX_SKILL_BYTES:
        raise SkillFormatError(
            f"SKILL.md is {len(data):,} bytes, over the {MAX_SKILL_BYTES // 1024} KiB limit"
        )
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    try:
        # Plain "utf-8" is C-fast; "utf-8-sig" goes through a Python-level codec.
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillFormatError(f"SKILL.md is not valid UTF-8 (byte {exc.start})") from None
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    front_text, body = _split(text)
    raw = _load_yaml(front_text) if front_text is not None else {}
    try:
        front = SkillFrontmatter.model_validate(raw)
    except ValidationError as exc:
        raise _type_problem(exc) from None
    if front.invocation_mode not in INVOCATION_MODES:
        raise SkillFormatError(
            f"unknown invocation_mode '{front.invocation_mode}' (expected "
            f"{' or '.join(INVOCATION_MODES)})"
        )
    extra = {str(k): v for k, v in raw.items() if k not in _KNOWN_KEYS}
    return SkillDocument(
        frontmatter=front,
        eligibility=_eligibility(front),
        allowed_tools=parse_allowed_tools(front.allowed_tools),
        body=body,
        extra=extra,
    )
