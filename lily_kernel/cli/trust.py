"""`lily trust [WORKSPACE] [--yes]`: trust a workspace from a terminal.

Shows what would take effect (the lily.yaml settings not applied, a held persona
folder, the held workspace skills and where they come from), asks, and records the
answer in the trust store under the Lily home; a folder with nothing held is recorded
too (its writes are then not asked). Exit 0: trusted (or already); 1: not trusted (no,
or no one to answer); 2: bad input (no such folder, a broken lily.yaml, a corrupt trust
store).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from lily_kernel.errors import UsageError
from lily_kernel.visible import visible

__all__ = ["add_trust_parser"]


def _cmd_trust(args: argparse.Namespace) -> int:
    from lily_kernel.environment import Workspace
    from lily_kernel.trust import TRUST_VARIABLE
    from lily_kernel.trust.question import trust_question

    workspace = Path(args.workspace)
    if not workspace.is_dir():
        raise UsageError(f"{args.workspace}: not a folder.")
    # The store's view, whatever this terminal's LILY_TRUST says.
    environ = {k: v for k, v in os.environ.items() if k != TRUST_VARIABLE}
    env = Workspace.load(workspace, environ)
    digests, skills, settings = env.pending_trust()
    if env.trust.problem:
        raise UsageError(env.trust.problem)
    if not skills and not settings and env.trust.entry() is not None:
        print(f"{visible(str(env.workspace))}: already trusted (no workspace skill, persona or lily.yaml "
              "setting is held).")
        return 0
    # Nothing held still asks: trusting the folder stops Lily asking before each write.
    question = trust_question(env.workspace, skills, settings, env.trust.entry() is not None)
    if args.yes:
        print(question.rsplit("\n", 1)[0])
    else:
        print(question, end=" ", flush=True)
        answer = sys.stdin.readline()
        if answer.strip().lower() not in ("y", "yes"):
            print("" if answer.endswith("\n") else "\n", end="")
            print(f"Not trusted: {visible(str(env.workspace))}")
            return 1
    env.trust.trust(digests)
    print(f"Trusted: {visible(str(env.workspace))}")
    return 0


def add_trust_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    trust = sub.add_parser(
        "trust", help="trust a workspace: let its skills and lily.yaml take effect")
    trust.add_argument("workspace", nargs="?", default=".", metavar="WORKSPACE",
                       help="the workspace folder (default: .)")
    trust.add_argument("--yes", action="store_true",
                       help="trust without asking (what is trusted is still listed)")
    trust.set_defaults(func=_cmd_trust)
