"""Decide whether a skill's host conditions (os, env, binaries) hold on this machine."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from lily_kernel.skills.models import Eligibility

__all__ = ["Host", "check_eligibility"]


@dataclass
class Host:
    """What eligibility is checked against; tests pass their own."""

    platform: str = sys.platform
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    which: Callable[[str], str | None] = shutil.which
    _found: dict[str, bool] = field(default_factory=dict, repr=False)

    def has_binary(self, name: str) -> bool:
        # Cached for one load only (see `for_one_load`): a load asks for each binary once,
        # and a binary installed since is found by the next /reload_skills.
        if name not in self._found:
            self._found[name] = self.which(name) is not None
        return self._found[name]

    def for_one_load(self) -> Host:
        """This host with an empty PATH-lookup cache, for one load."""
        return replace(self, _found={})


def check_eligibility(conditions: Eligibility, host: Host) -> str | None:
    """The first failing condition as a human reason, or None when eligible."""
    if conditions.os and host.platform not in conditions.os:
        return f"requires os {', '.join(conditions.os)}; this machine is {host.platform}"
    missing_env = [name for name in conditions.env if not host.environ.get(name)]
    if missing_env:
        return f"requires environment variable(s) {', '.join(missing_env)}, not set"
    missing_bins = [name for name in conditions.binaries if not host.has_binary(name)]
    if missing_bins:
        return f"requires binaries on PATH: {', '.join(missing_bins)} not found"
    if conditions.any_binaries and not any(map(host.has_binary, conditions.any_binaries)):
        return f"requires one of these binaries on PATH: {', '.join(conditions.any_binaries)}"
    return None
