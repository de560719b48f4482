"""How much a sandboxed run may take: memory and processes, and the command line that
applies it.

`limited(argv, limits)` is `argv` started through execution/limiter.py, which lowers the
run's resource limits (`setrlimit`) and then becomes the command: a memory limit
(`RLIMIT_DATA`: what each process allocates) and, where it counts this sandbox's
processes alone, a process limit (`RLIMIT_NPROC`). It is meant for the command
bubblewrap runs (inside the sandbox: the process limit then counts the sandbox's own
user namespace). Where Lily may make a control group of its own (root, a writable
cgroup file system: execution/cgroups.py), the runner also puts the whole run in one,
with the same memory and process limits for all its processes together.

What holds where (docs/execution.md, "Limits"): the memory limit everywhere on Linux;
the process limit in a control group, or for a person who is not root in bubblewrap's
user namespace (Linux ≥ 5.14 counts it per namespace). As root without a control group
there is no process limit: Linux never applies RLIMIT_NPROC to root.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DEFAULT_MEMORY_MB", "LIMITER", "MAX_PROCESSES", "Limits", "ReadsSettings",
           "RunSettings", "SettingsSource", "limited", "settings_now"]

DEFAULT_MEMORY_MB = 4096
# Processes and threads a run may have at once: far more than a build or a data-science
# kernel uses, far fewer than a fork bomb makes.
MAX_PROCESSES = 512
LIMITER = Path(__file__).with_name("limiter.py")


@dataclass(frozen=True)
class Limits:
    """A run's limits: memory in MiB (what each process allocates; a control group's
    whole run), and processes (and threads) at once."""

    memory_mb: int = DEFAULT_MEMORY_MB
    processes: int = MAX_PROCESSES

    @property
    def memory_bytes(self) -> int:
        return self.memory_mb * 1024 * 1024


@dataclass(frozen=True)
class RunSettings:
    """What a host gives each run: its time limit in seconds, the host's variables passed
    in (lily.yaml's `script_env`), the limits of its processes."""

    timeout: float
    allowed_env: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)


# A host's settings: fixed, or read at each use (a session's, from the workspace in force:
# runtime/services.py), so that a new workspace is never copied into a host by hand.
SettingsSource = RunSettings | Callable[[], RunSettings]


def settings_now(source: SettingsSource) -> RunSettings:
    """The settings a run is given now."""
    return source if isinstance(source, RunSettings) else source()


class ReadsSettings:
    """A host whose runs take their settings from `settings` at each use (the script host
    and the Python host): the time limit, the variables passed in, the limits."""

    settings: SettingsSource

    @property
    def timeout(self) -> float:
        return settings_now(self.settings).timeout

    @property
    def allowed_env(self) -> tuple[str, ...]:
        """lily.yaml's `script_env`: passed to what runs."""
        return settings_now(self.settings).allowed_env

    @property
    def limits(self) -> Limits:
        return settings_now(self.settings).limits


def limited(argv: Sequence[str], limits: Limits) -> list[str]:
    """`argv` run under `limits` (execution/limiter.py, by path, with the standard
    library only). The interpreter and the limiter's folder must be visible where it
    runs (the sandbox shows them: execution/plan.py)."""
    return [sys.executable, "-I", "-S", str(LIMITER), f"--memory={limits.memory_bytes}",
            f"--processes={limits.processes}", "--", *argv]
