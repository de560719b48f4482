"""What an untrusted folder may not do: widen anything.

A workspace's `lily.yaml` arrives with the folder. Until the person trusts it (at its
present digest), every setting that would widen what Lily does or where data goes is
not applied: the configuration keeps what it would be without the file (the LILY_*
variables are the person's own and always apply). Each such setting is one line the
person sees (`/help`, the trust question). Everything else in the file applies.

What each key allows is declared on its field in config.py (`spec(untrusted=...)`,
with `why`); the tool policy is per tool: no tool more allowed than without the file
(allow > ask > deny). And while the person does not trust the folder at all, the tools
that change it (`Tool.asks_untrusted`: `write`, `run_skill_script`, `shell`) are asked before
each call, whatever the policy says: a prompt-injected model must not plant a
`conftest.py` unasked.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from lily_kernel.config import (
    FEWER,
    FIXED,
    LOCAL_MODEL,
    LOCAL_ONLY,
    LOWER,
    OFF_ONLY,
    ON_ONLY,
    LilyConfig,
    McpServerConfig,
    ModelConfig,
    NetworkConfig,
)
from lily_kernel.tools import ToolPolicy, ToolRegistry
from lily_kernel.trust.servers import server_line
from lily_kernel.validation import field_spec

__all__ = ["untrusted_folder_policy", "untrusted_policy", "untrusted_settings"]

_STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}
Decision = Literal["allow", "ask", "deny"]


def _widens(rule: str, wanted: Any, kept: Any) -> bool:
    """Whether the file's value `wanted` does more than `kept`, the value without it."""
    if wanted == kept:
        return False
    if rule == FIXED:
        return True
    if rule == LOCAL_ONLY:
        return bool(wanted != LOCAL_MODEL)
    if rule == LOWER:  # None is "no limit of Lily's own": any number may be a raise
        return kept is None or wanted is None or bool(wanted > kept)
    if rule == ON_ONLY:
        return not wanted
    if rule == OFF_ONLY:
        return bool(wanted)
    if rule == FEWER:
        return any(name not in kept for name in wanted)
    raise ValueError(f"unknown untrusted rule {rule!r}")


MAX_VALUE_CHARS = 240  # of a value in a held setting's line (the trust question, /help)


MAX_ENTRIES = 20  # of a mapping's entries in one line (mcp_servers); the rest counted


def _cut(text: str) -> str:
    if len(text) <= MAX_VALUE_CHARS:
        return text
    half = (MAX_VALUE_CHARS - 1) // 2
    return f"{text[:half]}…{text[-half:]} ({len(text):,} characters)"


def _shown(value: Any) -> str:
    """A value as the line shows it: a long one (a 200 KB `model:`, 5,000 roots) cut in
    the middle with its length stated, so the question stays a question; a mapping
    (mcp_servers) entry by entry (trust/servers.py), at most MAX_ENTRIES of them."""
    if isinstance(value, dict):
        entries = [server_line(str(k), v) if isinstance(v, McpServerConfig) else str(k)
                   for k, v in list(value.items())[:MAX_ENTRIES]]
        more = len(value) - len(entries)
        return "; ".join(entries + ([f"and {more:,} more"] if more > 0 else [])) or "(none)"
    if isinstance(value, tuple):
        text = ", ".join(map(str, value)) or "(none)"
    else:
        text = "(none)" if value is None else str(value)
    return _cut(text)


def _held(owner: type, full: Any, base: Any, held: list[str]) -> Any:
    """`full` (a config dataclass) with each field the file may not change as it is
    taken from `base`; a line per field in `held`."""
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(owner):
        meta = field_spec(owner, f.name)
        rule = meta.get("untrusted")
        wanted, kept = getattr(full, f.name), getattr(base, f.name)
        if rule is None or not _widens(rule, wanted, kept):
            continue
        name = meta.get("label") or meta.get("key") or f.name  # network.allow
        held.append(f"{name}: {_shown(wanted)} ({meta['why']}; stays {_shown(kept)})")
        changes[f.name] = kept
    return replace(full, **changes) if changes else full


def untrusted_settings(full: LilyConfig, base: LilyConfig, workspace: Path
                       ) -> tuple[LilyConfig, tuple[str, ...]]:
    """`full` (file and variables) with what the file may not widen taken from `base`
    (variables only); and a line for each setting not applied."""
    held: list[str] = []
    config = _held(LilyConfig, full, base, held)
    llm = _held(ModelConfig, full.llm, base.llm, held)
    network = _held(NetworkConfig, full.network, base.network, held)  # `allow` held
    return replace(config, llm=llm, network=network), tuple(held)


def _stricter(wanted: Decision, kept: Decision) -> Decision:
    return max((wanted, kept), key=lambda d: _STRICTNESS[d])


def untrusted_policy(full: ToolPolicy, base: ToolPolicy, registry: ToolRegistry
                     ) -> tuple[ToolPolicy, tuple[str, ...]]:
    """Per governed tool, the stricter of the file's decision and the one without it. A
    tool asked by default that stays asked stays asked *by default* (so the profile
    `auto` and an "always" answer apply to it as without the file, never as if
    `tools.ask` named it)."""
    decided: dict[str, Decision] = {}
    held: list[str] = []
    for tool in registry.records():
        if not tool.governed:
            continue
        wanted, kept = full.decision(tool.name), base.decision(tool.name)
        decided[tool.name] = _stricter(wanted, kept)
        if decided[tool.name] != wanted:
            held.append(f"tools: {tool.name} would be '{wanted}', stays '{kept}'")
    by_default = frozenset(
        name for name, decision in decided.items() if decision == "ask"
        and not full.asks(name) and (name in full.asked or name in base.asked))
    return _policy(decided, full, by_default), tuple(held)


def untrusted_folder_policy(policy: ToolPolicy, registry: ToolRegistry) -> ToolPolicy:
    """While the person does not trust the folder: the tools that change it
    (`Tool.asks_untrusted`) asked where the policy allows them."""
    return replace(policy, untrusted=frozenset(t.name for t in registry.records()
                                               if t.asks_untrusted))


def _policy(decided: dict[str, Decision], like: ToolPolicy,
            by_default: frozenset[str]) -> ToolPolicy:
    """The decisions as a policy: `by_default`, asked by default (allowed, unnamed)."""
    by = {d: tuple(n for n, v in decided.items() if v == d and n not in by_default)
          for d in _STRICTNESS}
    return ToolPolicy(allow=(*by["allow"], *sorted(by_default)), ask=by["ask"],
                      deny=by["deny"], explicit=like.explicit, untrusted=like.untrusted,
                      asked=by_default)
