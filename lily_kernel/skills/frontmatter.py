"""Parse SKILL.md bytes into frontmatter and body; pure, never executes anything.

The frontmatter is YAML between `---` lines at the very top (CRLF and a UTF-8 BOM are
accepted) and is read with `yaml.safe_load`'s C loader when available. Recognised keys
are validated strictly against their one description (`fields.Frontmatter`) by plain
code; unknown keys are kept for `/help`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from lily_kernel.skills.fields import (
    INVOCATION_MODES,
    EligibilityBlock,
    Frontmatter,
    OpenClawBlock,
    parse_allowed_tools,
)
from lily_kernel.skills.models import Eligibility
from lily_kernel.skills.plain_frontmatter import parse_plain_frontmatter
from lily_kernel.validation import ShapeError, build, field_keys

__all__ = [
    "KNOWN_OS",
    "MAX_SKILL_BYTES",
    "SkillDocument",
    "SkillFormatError",
    "parse_allowed_tools",
    "parse_skill_document",
    "size_problem",
]

MAX_SKILL_BYTES = 256 * 1024
KNOWN_OS = ("darwin", "linux", "win32")

_NO_CONDITIONS = Eligibility()
_BOM = b"\xef\xbb\xbf"


_CLOSING_FENCE = re.compile(r"^---[ \t]*$", re.MULTILINE)


class SkillFormatError(ValueError):
    """The SKILL.md cannot be used; the message is the human reason."""


_KNOWN_KEYS = frozenset(key for _, key, _ in field_keys(Frontmatter))


@dataclass(frozen=True)
class SkillDocument:
    """A parsed SKILL.md: validated frontmatter, unknown keys, derived eligibility, body."""

    frontmatter: Frontmatter
    eligibility: Eligibility
    allowed_tools: tuple[str, ...] | None
    body: str
    extra: dict[str, Any] = field(default_factory=dict)
    # False when the file has no `---` block at all (the Agent Skills specification
    # requires one; Lily's format does not).
    has_frontmatter: bool = True


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
    plain = parse_plain_frontmatter(source)
    if plain is not None:  # the common shape, without PyYAML (plain_frontmatter.py)
        return plain
    from lily_kernel.skills.yaml_frontmatter import load_yaml

    data, problem = load_yaml(source)
    if problem is not None:
        raise SkillFormatError(f"invalid YAML frontmatter{problem}")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SkillFormatError(
            f"the frontmatter is not a mapping (it is a YAML {type(data).__name__})"
        )
    return data


def _type_problem(exc: ShapeError) -> SkillFormatError:
    if exc.unknown:
        return SkillFormatError(f"key '{exc.key}' is not a known key")
    return SkillFormatError(f"key '{exc.key}' has the wrong type: {exc.problem}")


def size_problem(size: int) -> str:
    """The one message for a SKILL.md over the size limit (parser and loader use it)."""
    return f"SKILL.md is {size:,} bytes, over the {MAX_SKILL_BYTES // 1024} KiB limit"


def _check_os(values: tuple[str, ...], key: str) -> None:
    for value in values:
        if value not in KNOWN_OS:
            raise SkillFormatError(
                f"key '{key}' names an unknown os '{value}' (expected one of "
                f"{', '.join(KNOWN_OS)})"
            )


def _eligibility(front: Frontmatter) -> Eligibility:
    """Lily's `eligibility` merged with OpenClaw's `metadata.openclaw` conditions."""
    raw = (front.metadata or {}).get("openclaw")
    if front.eligibility is None and raw is None:
        return _NO_CONDITIONS
    block = front.eligibility or EligibilityBlock()
    _check_os(block.os, "eligibility.os")
    os_list, env, bins = list(block.os), list(block.env), list(block.binaries)
    any_bins: list[str] = []
    if raw is not None:
        if not isinstance(raw, dict):
            raise SkillFormatError("key 'metadata.openclaw' must be a mapping")
        try:
            claw = build(OpenClawBlock, raw, prefix="metadata.openclaw.")
        except ShapeError as exc:
            raise _type_problem(exc) from None
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
        raise SkillFormatError(size_problem(len(data)))
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
        front = build(Frontmatter, raw)
    except ShapeError as exc:
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
        has_frontmatter=front_text is not None,
    )
