"""The one description of a SKILL.md frontmatter: every recognised key, its type and label.

`Frontmatter` is read by the parser (validation derives from its field types), kept
whole by each `Skill`, and walked in order by everything that shows a skill: `/help`
and inspection (each field's `label`), and `lily skills --json` (the fields marked
`json`). Field order is the order people see.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from lily_kernel.validation import spec

__all__ = [
    "ANY_COMMAND",
    "INVOCATION_MODES",
    "EligibilityBlock",
    "Frontmatter",
    "InvocationMode",
    "OpenClawBlock",
    "RequiresBlock",
    "parse_allowed_tools",
    "shell_commands",
    "shown_fields",
    "tool_names_of_entries",
]

InvocationMode = Literal["prompt_rewrite", "tool_dispatch"]
INVOCATION_MODES: tuple[str, ...] = ("prompt_rewrite", "tool_dispatch")


def _shown(label: str, *, group: str = "lily", json: bool = False,
           key: str | None = None) -> dict[str, Any]:
    """Metadata of a field: how validation reads it, how people and JSON see it.

    group "lily": shown always, before the skill's location; "standard": an Agent
    Skills field shown only when set, after it; "claude": a Claude Code field, shown
    only when set, after those.
    """
    return {**spec(key=key, label=label), "group": group, "json": json}


@dataclass(frozen=True, slots=True)
class EligibilityBlock:
    """Lily's `eligibility` key; an unknown key in it is an error."""

    os: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    binaries: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class OpenClawRequires:
    unknown_keys: ClassVar[str] = "ignore"

    bins: tuple[str, ...] = ()
    anyBins: tuple[str, ...] = ()  # noqa: N815 - OpenClaw's key
    env: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class OpenClawBlock:
    """OpenClaw's `metadata.openclaw`, of which Lily reads the host conditions."""

    unknown_keys: ClassVar[str] = "ignore"

    os: tuple[str, ...] = ()
    requires: OpenClawRequires = OpenClawRequires()


@dataclass(frozen=True, slots=True)
class RequiresBlock:
    """Composio's `requires`: the MCP servers the skill works through (`mcp: [rube]`); a
    server the session has not configured makes the skill ineligible (skills/loader.py)."""

    unknown_keys: ClassVar[str] = "ignore"

    mcp: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Frontmatter:
    """The recognised keys of a SKILL.md frontmatter (SPEC §2.2), strictly typed."""

    summary: str | None = field(default=None, metadata=_shown("summary"))
    # A plain string: an unknown mode gets its own message (see frontmatter.py).
    invocation_mode: str = field(default="prompt_rewrite",
                                 metadata=_shown("mode", json=True))
    command: str | None = field(default=None, metadata=_shown("alias", json=True))
    command_tool: str | None = field(default=None,
                                     metadata=_shown("command tool", json=True))
    requires_tools: tuple[str, ...] = field(default=(),
                                            metadata=_shown("required tools", json=True))
    eligibility: EligibilityBlock | None = field(default=None,
                                                 metadata=_shown("eligibility"))
    disable_model_invocation: bool = field(
        default=False, metadata=_shown("model invocation", key="disable-model-invocation"))
    name: str | None = field(default=None,
                             metadata=_shown("name (frontmatter)", group="standard"))
    description: str | None = field(default=None,
                                    metadata=_shown("description", group="standard"))
    allowed_tools: str | tuple[str, ...] | None = field(
        default=None, metadata=_shown("allowed-tools", group="standard", key="allowed-tools"))
    license: str | None = field(default=None, metadata=_shown("license", group="standard"))
    compatibility: str | None = field(default=None,
                                      metadata=_shown("compatibility", group="standard"))
    metadata: dict[str, Any] | None = field(default=None,
                                            metadata=_shown("metadata", group="standard"))
    # Claude Code's fields (docs/skills.md, "Claude-style invocation"). None: not set.
    when_to_use: str | None = field(default=None,
                                    metadata=_shown("when to use", group="claude"))
    # A list too: an unquoted `argument-hint: [issue]` is a YAML list.
    argument_hint: str | tuple[str, ...] | None = field(
        default=None, metadata=_shown("argument hint", group="claude", key="argument-hint"))
    arguments: str | tuple[str, ...] | None = field(
        default=None, metadata=_shown("arguments", group="claude"))
    user_invocable: bool | None = field(
        default=None, metadata=_shown("person invocation", group="claude",
                                      key="user-invocable"))
    disallowed_tools: str | tuple[str, ...] | None = field(
        default=None, metadata=_shown("disallowed-tools", group="claude",
                                      key="disallowed-tools"))
    # Composio's skills' field (ComposioHQ/awesome-claude-skills).
    requires: RequiresBlock | None = field(
        default=None, metadata=_shown("requires", group="claude"))


# `allowed-tools` (Agent Skills): entries are a tool name, optionally followed by an
# argument pattern, `Bash(git:*)`. The one reading of the key's value is here.
_TOOL_ENTRY = re.compile(r"[^\s,()]+(?:\([^)]*\))?")
_ENTRY_NAME = re.compile(r"[^(]+")


def parse_allowed_tools(value: str | tuple[str, ...] | list[str] | None
                        ) -> tuple[str, ...] | None:
    """`allowed-tools` as entries: a space- or comma-separated string, or a list.

    `Bash(git:*)`-style argument patterns are kept whole; matching uses the name part.
    """
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    return tuple(entry for item in items for entry in _TOOL_ENTRY.findall(item))


# A `Bash` entry that names no command (`Bash`, `Bash(*)`) allows any command: besides
# `bash` it stands for this name, which keeps the tools that run any code (python).
ANY_COMMAND = "bash(*)"
_ANY = ("", "*", ":*")


def _bash_argument(entry: str) -> str | None:
    """The argument of a `Bash(...)` entry (stripped), "" for a bare `Bash`, None for
    an entry of another tool."""
    name, paren, rest = entry.partition("(")
    if name.strip().lower() != "bash":
        return None
    return rest.removesuffix(")").strip() if paren else ""


def tool_names_of_entries(entries: tuple[str, ...]) -> frozenset[str]:
    """The lower-case tool names of `allowed-tools` entries (`Bash(git:*)` → `bash`;
    a `Bash` of any command also ANY_COMMAND)."""
    names = {m.group(0).strip().lower() for m in map(_ENTRY_NAME.match, entries) if m}
    if any(_bash_argument(entry) in _ANY for entry in entries):
        names.add(ANY_COMMAND)
    return frozenset(names)


def shell_commands(entries: tuple[str, ...]) -> tuple[str, ...] | None:
    """The command patterns `allowed-tools` entries allow the shell (`Bash(git status:*)`
    → `git status:*`, `Bash(npm test)` → `npm test`); None when they allow any command
    (a bare `Bash`, `Bash(*)`, or `shell` named) or name no `Bash` at all (then the
    shell is not kept: tools/policy.py)."""
    names = tool_names_of_entries(entries)
    if ANY_COMMAND in names or "shell" in names:
        return None
    patterns = tuple(a for a in map(_bash_argument, entries) if a)
    return patterns or None


@dataclass(frozen=True, slots=True)
class ShownField:
    attr: str
    label: str
    group: str
    json: bool


def _shown_fields() -> tuple[ShownField, ...]:
    from dataclasses import fields

    return tuple(ShownField(f.name, f.metadata["lily"]["label"], f.metadata["group"],
                            f.metadata["json"]) for f in fields(Frontmatter))


SHOWN_FIELDS = _shown_fields()


def shown_fields(group: str | None = None) -> tuple[ShownField, ...]:
    """The frontmatter fields in the order people see them (optionally one group)."""
    return tuple(f for f in SHOWN_FIELDS if group is None or f.group == group)
