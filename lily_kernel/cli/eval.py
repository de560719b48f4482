"""`lily eval [PATH...]`: trigger evals through Lily's real selection path, the ranker beside.

Exit 0; 1 when accuracy is under `--min-accuracy`; 2 on bad input (one line).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from html import escape
from pathlib import Path
from typing import Any

from lily_kernel.errors import UsageError

__all__ = ["add_eval_parser"]


def _progress(done: int, total: int) -> None:
    if sys.stderr.isatty():
        filled = 30 * done // total
        end = "\n" if done == total else ""
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {done}/{total}{end}")
        sys.stderr.flush()


def _text(report: Any) -> str:
    lines = [f"model {report.model}, {len(report.results)} queries x {report.runs} run(s)",
             f"accuracy          {report.accuracy:6.1%}",
             f"ranker alone      {report.ranker_accuracy:6.1%}  (same queries, no model; "
             f"by {report.ranked_by})",
             f"seconds per query {report.seconds_per_query:6.2f}", "",
             f"{'skill':32} {'queries':>7} {'trigger rate':>12} {'false triggers':>14}"]
    for name, row in report.skills().items():
        rate = "-" if row["trigger_rate"] is None else f"{row['trigger_rate']:.0%}"
        lines.append(f"{name:32} {row['queries']:>7} {rate:>12} {row['false_triggers']:>14}")
    confusions = report.confusions()
    if confusions:
        lines += ["", "confusions (expected -> selected, runs):"]
        lines += [f"  {e} -> {s}: {n}" for e, s, n in confusions[:20]]
    return "\n".join(lines) + "\n"


def _html(report: Any) -> str:
    def row(cells: list[str], tag: str = "td") -> str:
        return "<tr>" + "".join(f"<{tag}>{escape(c)}</{tag}>" for c in cells) + "</tr>"

    skills = [row([n, str(r["queries"]), "-" if r["trigger_rate"] is None else
                   f"{r['trigger_rate']:.0%}", str(r["false_triggers"])])
              for n, r in report.skills().items()]
    items = [row([r.item.query, r.item.expected(), ", ".join(s or "(none)" for s in r.selected),
                  "pass" if r.passed else "FAIL", r.ranker or "(none)"])
             for r in report.results]
    return (
        "<!doctype html><meta charset='utf-8'><title>Lily trigger evals</title>"
        "<style>body{font-family:sans-serif}td,th{border:1px solid #ccc;padding:4px 8px;"
        "text-align:left}table{border-collapse:collapse;margin-bottom:2em}</style>"
        f"<h1>Trigger evals: {escape(report.model)}</h1>"
        f"<p>{len(report.results)} queries &times; {report.runs} run(s). Accuracy "
        f"{report.accuracy:.1%}; the ranker alone {report.ranker_accuracy:.1%} "
        f"(by {escape(report.ranked_by)}); "
        f"{report.seconds_per_query:.2f} s per query.</p><h2>Skills</h2><table>"
        + row(["skill", "queries", "trigger rate", "false triggers"], "th") + "".join(skills)
        + "</table><h2>Queries</h2><table>"
        + row(["query", "expected", "selected (each run)", "result", "ranker alone"], "th")
        + "".join(items) + "</table>\n")


async def _evaluate(args: argparse.Namespace) -> Any:
    from lily_kernel.evals import (
        load_eval_items,
        ranker_choice,
        run_eval,
        selected_skill,
        trigger_eval_files,
    )
    from lily_kernel.runtime.runtime import LilyRuntime

    workspace = Path(args.workspace)
    if not workspace.is_dir():
        raise UsageError(f"--workspace {args.workspace}: not a folder.")
    environ = {**os.environ, "LILY_EVENT_LOG": "0", "LILY_STREAM": "0"}
    if args.model:
        environ["LILY_MODEL"] = args.model
    first = LilyRuntime.start(workspace, environ)
    first.close()  # (its log is off: nothing is open but the session's model, loaded later)
    snapshot = first.session.skill_snapshot
    paths = [Path(p) for p in args.paths] or trigger_eval_files(snapshot)
    if not paths:
        raise UsageError("no eval files: give one, or add <skill>/evals/trigger_evals.json "
                         "to a skill.")
    items = load_eval_items(paths, snapshot)
    if first.session.model_config.model is None:
        raise UsageError("no model to evaluate: none is configured and the embedded model is "
                         "not installed. Give --model, or set LILY_MODEL.")
    model = await first.get_model()

    async def select(query: str) -> str | None:
        session = LilyRuntime.start(workspace, environ)  # a fresh session per run
        session.model = model  # the same model, loaded once
        try:
            return await selected_skill(session, query)
        finally:
            session.close()

    ranker = first.session.ranker()
    return await run_eval(items, select, lambda q: ranker_choice(snapshot, ranker, q),
                          args.runs, model.name, _progress, lambda: ranker.ranked_by)


def _cmd_eval(args: argparse.Namespace) -> int:
    if args.runs < 1:
        raise UsageError("--runs must be at least 1.")
    if args.min_accuracy is not None and not 0 <= args.min_accuracy <= 1:
        raise UsageError("--min-accuracy is a share, from 0 to 1 (e.g. 0.85).")
    if args.html and (Path(args.html).is_dir() or not Path(args.html).parent.is_dir()):
        raise UsageError(f"--html {args.html}: give a file in a folder that exists.")
    import asyncio

    report = asyncio.run(_evaluate(args))
    if args.html:
        Path(args.html).write_text(_html(report), encoding="utf-8")
    sys.stdout.write(json.dumps(report.as_json(), indent=2) + "\n" if args.json
                     else _text(report))
    if args.min_accuracy is not None and report.accuracy < args.min_accuracy:
        print(f"lily: accuracy {report.accuracy:.1%} is under --min-accuracy "
              f"{args.min_accuracy:.1%}", file=sys.stderr)
        return 1
    return 0


def add_eval_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    evaluate = sub.add_parser(
        "eval", help="trigger evals: which skill Lily's selection picks for each query")
    evaluate.add_argument("paths", nargs="*", metavar="PATH",
                          help="trigger-eval or routing JSON files (default: every "
                               "<skill>/evals/trigger_evals.json of the workspace)")
    evaluate.add_argument("--workspace", default=".", help="the workspace (default: .)")
    evaluate.add_argument("--runs", type=int, default=3, help="runs per query (default: 3)")
    evaluate.add_argument("--model", help="the model (default: the configured one)")
    evaluate.add_argument("--json", action="store_true", help="the report as JSON")
    evaluate.add_argument("--html", metavar="FILE", help="also write an HTML report")
    evaluate.add_argument("--min-accuracy", type=float, metavar="X",
                          help="exit 1 when accuracy is under X (0 to 1)")
    evaluate.set_defaults(func=_cmd_eval)
