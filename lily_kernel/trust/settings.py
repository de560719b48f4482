"""What an untrusted `lily.yaml` may not do: widen anything.

A workspace's `lily.yaml` arrives with the folder. Until the person trusts it (at its
present digest), every setting that would widen what Lily does or where data goes is
not applied: the configuration keeps what it would be without the file (the LILY_*
variables are the person's own and always apply). Each such setting is one line the
person sees (`/help`, the trust question). Everything else in the file applies.

- tools: no tool more allowed than without the file (allow > ask > deny, per tool);
- no `api_base`, no `model` but the local ones (data would go elsewhere);
- no skills root outside the workspace, no other Lily `home` (where trust is kept);
- no `event_log: false`, no longer `script_timeout`, no more `script_env` variables.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Literal

from lily_kernel.config import LilyConfig, is_local_model
from lily_kernel.tools import ToolPolicy, ToolRegistry

__all__ = ["untrusted_policy", "untrusted_settings"]

_STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}


def _inside(path: Path | str | None, workspace: Path) -> bool:
    if path is None:
        return True
    real, top = os.path.realpath(path), os.path.realpath(workspace)
    return real == top or real.startswith(top + os.sep)


def untrusted_settings(full: LilyConfig, base: LilyConfig, workspace: Path
                       ) -> tuple[LilyConfig, tuple[str, ...]]:
    """`full` (file and variables) with what the file may not widen taken from `base`
    (variables only); and a line for each setting not applied."""
    held: list[str] = []
    config, llm = full, full.llm

    def keep_base(key: str, why: str) -> None:
        held.append(f"{key}: {why}")

    if llm.api_base != base.llm.api_base:
        keep_base("api_base", "sends requests (and keys) to another server")
        llm = replace(llm, api_base=base.llm.api_base)
    if llm.model != base.llm.model and not is_local_model(llm.model):
        keep_base("model", f"{llm.model} would send the conversation elsewhere")
        llm = replace(llm, model=base.llm.model)
    for key in ("home", "skills_user_dir", "skills_bundled_dir"):
        if getattr(full, key) != getattr(base, key):
            keep_base(key, "a folder outside this workspace")
            config = replace(config, **{key: getattr(base, key)})
    if (full.skills_workspace_dir != base.skills_workspace_dir
            and not _inside(full.skills_workspace_dir, workspace)):
        keep_base("skills_workspace_dir", "a skills root outside this workspace")
        config = replace(config, skills_workspace_dir=base.skills_workspace_dir)
    outside = [p for p in full.skills_extra_dirs
               if p not in base.skills_extra_dirs and not _inside(p, workspace)]
    if outside:
        keep_base("skills_extra_dirs", f"skills roots outside this workspace: {', '.join(outside)}")
        config = replace(config, skills_extra_dirs=tuple(
            p for p in full.skills_extra_dirs if p not in outside))
    if not full.event_log and base.event_log:
        keep_base("event_log", "turning the session log off")
        config = replace(config, event_log=True)
    extra_env = [n for n in full.script_env if n not in base.script_env]
    if extra_env:
        keep_base("script_env", f"passing {', '.join(extra_env)} to skill scripts")
        config = replace(config, script_env=base.script_env)
    if full.script_timeout > base.script_timeout:
        keep_base("script_timeout", f"longer than {base.script_timeout:g} s")
        config = replace(config, script_timeout=base.script_timeout)
    return replace(config, llm=llm), tuple(held)


def untrusted_policy(full: ToolPolicy, base: ToolPolicy, registry: ToolRegistry
                     ) -> tuple[ToolPolicy, tuple[str, ...]]:
    """Per governed tool, the stricter of the file's decision and the one without it."""
    allow: list[str] = []
    ask: list[str] = []
    deny: list[str] = []
    held: list[str] = []
    for tool in registry:
        if not tool.governed:
            continue
        wanted, kept = full.decision(tool.name), base.decision(tool.name)
        decision: Literal["allow", "ask", "deny"] = max(
            (wanted, kept), key=lambda d: _STRICTNESS[d])
        if decision != wanted:
            held.append(f"tools: {tool.name} would be '{wanted}', stays '{kept}'")
        {"allow": allow, "ask": ask, "deny": deny}[decision].append(tool.name)
    policy = ToolPolicy(allow=tuple(allow), ask=tuple(ask), deny=tuple(deny),
                        explicit=full.explicit)
    return policy, tuple(held)
