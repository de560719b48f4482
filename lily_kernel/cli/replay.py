"""`lily replay LOG`: replay a recorded session; exit 0 when identical, 1 on a divergence,
2 for a log that cannot be replayed (a ReplayError, told as `lily: <message>`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["add_replay_parser"]


def _cmd_replay(args: argparse.Namespace) -> int:
    from lily_kernel.replay import replay_session

    report = replay_session(Path(args.log))
    print(report.describe())
    if not report.identical:
        sys.stdout.flush()
        return 1
    return 0


def add_replay_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    replay = sub.add_parser(
        "replay", help="re-run a recorded session (.lily/sessions/<id>.jsonl) in a scratch "
                       "copy of its workspace, with the current files and settings and the "
                       "recorded model answers; exit 1 at the first divergence")
    replay.add_argument("log", metavar="LOG")
    replay.set_defaults(func=_cmd_replay)
