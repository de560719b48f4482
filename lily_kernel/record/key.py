"""The key of a chat turn: what determines its answer, digested (docs/sessions.md).

A turn's answer is determined by the conversation so far (as the model saw it), the
request (and the skill the person forced), the model and the settings that change its
answer, the skill snapshot, the persona and the tools the policy lets the model use.
Each is digested on its own (`parts`: a miss can say which part differs), and the key
is the digest of the parts. Pure: no clock, no disk.

What the record keeps is redacted like the log, and written with the paths that differ
between machines as tokens (`PathTokens`: the workspace, the skills roots outside it,
the home folder), so a notebook recorded on one machine is answered from its record on
another (a golden transcript in CI), and a key computed here matches the one recorded
there.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from lily_kernel.config import ModelConfig

__all__ = ["KEY_PARTS", "PathTokens", "canonical", "offered_tools", "persona_digest",
           "request_digest", "turn_key", "turn_parts"]

Value = TypeVar("Value")
# The parts of a turn's key, in the order a miss names them.
KEY_PARTS = ("history", "request", "model", "skills", "persona", "tools")
# The model settings that change an answer (not how it is reached or shown: api_base,
# timeouts, retries, streaming, the footer).
_MODEL_KEYS = ("model", "temperature", "max_tokens", "context_window", "max_steps")


def canonical(value: Any) -> str:
    """One JSON text for a value, whatever the order of its keys."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      default=str)


def _digest(value: Any) -> str:
    return hashlib.sha256(canonical(value).encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class PathTokens:
    """Paths that differ between machines, each with the token the record writes for it
    (longest path first, so a root inside the home folder keeps its own token)."""

    pairs: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, workspace: Path, roots: Iterable[tuple[str, str]],
           home: str | None) -> PathTokens:
        """The workspace, each skills root outside it (by its source, numbered), and the
        home folder."""
        found: dict[str, str] = {str(workspace): "«lily:workspace»"}
        counted: dict[str, int] = {}
        for source, path in roots:
            inside = path == str(workspace) or path.startswith(f"{workspace}/")
            if not path or inside or path in found:
                continue
            counted[source] = counted.get(source, 0) + 1
            found[path] = f"«lily:{source}:{counted[source]}»"
        if home and home != "/" and home not in found:
            found[home] = "«lily:home»"
        return cls(tuple(sorted(found.items(), key=lambda p: -len(p[0]))))

    def tokens(self, value: Value) -> Value:
        """`value` (strings, lists and mappings of them) with each path as its token."""
        return _mapped(value, self.pairs)  # type: ignore[no-any-return]

    def paths(self, value: Value) -> Value:
        """`value` with each token as this machine's path."""
        return _mapped(value, tuple((t, p) for p, t in self.pairs))  # type: ignore[no-any-return]


def _mapped(value: Any, pairs: tuple[tuple[str, str], ...]) -> Any:
    if isinstance(value, str):
        for old, new in pairs:
            if old in value:
                value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {k: _mapped(v, pairs) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mapped(v, pairs) for v in value]
    return value


def persona_digest(agent: str, files: Iterable[tuple[str, str]]) -> str:
    """The persona's part of a key: its agent, and each file's name and content."""
    return _digest({"agent": agent, "files": [[name, content] for name, content in files]})


def offered_tools(decisions: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    """The tools' part of a key, from each tool's name and the policy's decision: those
    the model may call, in order. Whether one is asked first does not change what the
    model may call (and a recorded call runs again under the policy of the day, asked
    where it asks)."""
    return tuple(sorted(name for name, decision in decisions if decision != "deny"))


def turn_parts(*, history: list[dict[str, Any]], text: str, forced: str | None,
               model: ModelConfig, snapshot_digest: str, persona: str,
               tools: Iterable[str], tokens: PathTokens,
               redact: Callable[[Any], Any]) -> dict[str, str]:
    """The digest of each part of a turn's key. The history and the request as the
    record keeps them (redacted, paths as tokens); `persona` digested (persona_digest);
    `tools` those the model may call (offered_tools)."""
    kept = tokens.tokens(redact({"history": history, "text": text.strip()}))
    return {
        "history": _digest(kept["history"]),
        "request": _digest({"text": kept["text"], "skill": forced}),
        "model": _digest({k: getattr(model, k) for k in _MODEL_KEYS}),
        "skills": snapshot_digest,
        "persona": persona,
        "tools": _digest(sorted(tools)),
    }


def turn_key(parts: dict[str, str]) -> str:
    return _digest([parts.get(name, "") for name in KEY_PARTS])


def request_digest(messages: list[dict[str, Any]], schema: dict[str, Any] | None,
                   tokens: PathTokens, redact: Callable[[Any], Any]) -> str:
    """What a model call was asked, digested as the record keeps it: a replayed step
    is answered from the record only while the request is the recorded one."""
    return _digest(tokens.tokens(redact({"messages": messages, "schema": schema})))
