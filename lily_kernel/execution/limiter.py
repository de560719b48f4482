"""Lower this process's resource limits, join control groups, then become the command.

Run by path with `python -I -S` (the standard library only), before the command it
limits; whatever the command starts inherits the limits and the groups:

    python -I -S limiter.py [--memory=BYTES] [--processes=N] [--cgroup=DIR]... -- COMMAND...

`--memory`: RLIMIT_DATA, each process's data (its heap and private writable
mappings: what it allocates, not the address space it reserves; an idle IPython kernel
reserves ~740 MiB and uses ~125). `--processes`: RLIMIT_NPROC, set
only in a user namespace of its own (bubblewrap's, for a person who is not root), where
Linux counts that namespace's processes alone; outside one it would count every process
of the user, and as root Linux ignores it. `--cgroup`: a control group folder Lily made
for this run (execution/cgroups.py), joined by writing this process into it. Exits 126
when a limit or a group cannot be applied (said on stderr), 127 when the command cannot
be started.
"""

from __future__ import annotations

import os
import resource
import sys

_FULL_MAP = ("0", "0", "4294967295")  # the initial user namespace's uid_map


def own_user_namespace() -> bool:
    """Whether this process is in a user namespace other than the initial one."""
    try:
        with open("/proc/self/uid_map") as uid_map:
            return [line.split() for line in uid_map] != [list(_FULL_MAP)]
    except OSError:
        return False


def _lower(which: int, value: int) -> None:
    hard = resource.getrlimit(which)[1]
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print("limiter: no command given", file=sys.stderr)
        return 2
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1:]
    try:
        for option in options:
            name, _, value = option.partition("=")
            if name == "--memory":
                _lower(resource.RLIMIT_DATA, int(value))
            elif name == "--processes":
                if own_user_namespace():
                    _lower(resource.RLIMIT_NPROC, int(value))
            elif name == "--cgroup":
                with open(os.path.join(value, "cgroup.procs"), "w") as procs:
                    procs.write(str(os.getpid()))
            else:
                raise ValueError(f"unknown option {option}")
    except (OSError, ValueError) as exc:
        print(f"limiter: cannot apply the run's limits: {exc}", file=sys.stderr)
        return 126
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"cannot start {command[0]}: {exc.strerror}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
