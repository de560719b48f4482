"""Benchmark: Run All after a restart, answered from the record (issue 30).

    .venv/bin/python benchmarks/run_all_replay.py [--turns 20] [--delay 0.5] [--recorded 1000]

1. A notebook of `--turns` chat cells, saved as JupyterLab saves it, runs through nbclient
   with a real kernel (JPY_SESSION_NAME set, as JupyterLab sets it) against the loopback
   model answering after `--delay` seconds with a fresh token each time: the first run.
   Then a new kernel (a restart) runs it again: the model calls it makes, the time its
   cells take against the first run's (the kernel's start apart, and with it), and
   whether every output is the first run's, the replay line aside. The replayed
   notebook is saved and checked by `pytest --nbval` with the model unreachable.
2. A new kernel again, and a follow-up in a new cell (its id, as JupyterLab sends it):
   whether the model received every earlier turn, in order.
3. In process: a workspace holding `--recorded` recorded turns (sessions of 20 turns), and
   a new session's record looking a turn up, per cell: the first cell (the index read),
   the next ones, a turn not recorded, and the first cell with the index lost (rebuilt
   from the logs).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import nbformat  # noqa: E402
from jupyter_client.manager import start_new_kernel  # noqa: E402
from nbclient import NotebookClient  # noqa: E402
from nbformat.v4 import new_code_cell, new_notebook  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
from kernel_common import bench_env  # noqa: E402

from lily_kernel.llm import ChatResponse, ScriptedModel, Usage  # noqa: E402
from lily_kernel.record.answers import NotebookRecord  # noqa: E402
from lily_kernel.record.index import RecordIndex  # noqa: E402
from lily_kernel.runtime.collaborators import Collaborators, TurnFacts  # noqa: E402
from lily_kernel.runtime.conversation import turn_inputs  # noqa: E402
from lily_kernel.runtime.runtime import LilyRuntime  # noqa: E402
from lily_kernel.runtime.sink import SilentSink  # noqa: E402
from tests.support.openai_server import OpenAIServer, Reply, fresh_tokens  # noqa: E402

REPLAYED = "Replayed from the record"


def _notebook(path: Path, turns: int) -> None:
    nb = new_notebook()  # type: ignore[no-untyped-call]
    nb.metadata["kernelspec"] = {"name": "lily", "display_name": "Lily", "language": "lily"}
    for n in range(turns):
        cell = new_code_cell(f"Question {n + 1}: tell me one fact about the number {n + 1}.")  # type: ignore[no-untyped-call]
        cell.id = f"cell-{n + 1}"
        nb.cells.append(cell)
    nbformat.write(nb, path)  # type: ignore[no-untyped-call]


def _run(path: Path, env: dict[str, str]) -> tuple[Any, float, float]:
    """Run All in a new kernel: the notebook, the seconds its cells took, and the
    seconds with the kernel's start."""
    nb = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    client = NotebookClient(nb, kernel_name="lily", timeout=120, record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    began = time.perf_counter()
    with client.setup_kernel(env=env):
        cells = time.perf_counter()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        done = time.perf_counter()
    return nb, done - cells, done - began


def _outputs(nb: Any) -> list[list[str]]:
    return [[str(o.get("data", {}).get("text/plain", "")) for o in c.outputs
             if not str(o.get("data", {}).get("text/plain", "")).startswith(REPLAYED)]
            for c in nb.cells]


def _follow_up(workspace: Path, env: dict[str, str], turns: int,
               server: OpenAIServer) -> bool:
    km, kc = start_new_kernel(kernel_name="lily", cwd=str(workspace), env=env,
                              startup_timeout=60)
    try:
        msg = kc.session.msg("execute_request", {
            "code": "Which facts did you tell me?", "silent": False, "store_history": True,
            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
            metadata={"cellId": "cell-new"})
        kc.shell_channel.send(msg)
        kc.get_shell_msg(timeout=120)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    users = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "user"]
    wanted = [f"Question {n + 1}: tell me one fact about the number {n + 1}."
              for n in range(turns)]
    return users == [*wanted, "Which facts did you tell me?"]


def kernel_part(root: Path, turns: int, delay: float) -> None:
    workspace = root / "workspace"
    workspace.mkdir()
    (workspace / "lily.yaml").write_text("model: openai/bench\nstream: false\nretries: 0\n")
    path = workspace / "talk.ipynb"
    _notebook(path, turns)
    fresh = fresh_tokens()

    def slow(body: dict[str, Any]) -> Reply:
        reply = fresh(body)
        reply.delay = delay
        return reply

    with OpenAIServer(default=slow) as server:
        env = {**bench_env(root / "home"), "LILY_EVENT_LOG": "1",
               "LILY_API_BASE": server.base_url, "OPENAI_API_KEY": "sk-bench-not-a-key-000",
               "JPY_SESSION_NAME": str(path), "PYTHONPATH": str(REPO)}
        first, first_cells, first_all = _run(path, env)
        nbformat.write(first, path)  # type: ignore[no-untyped-call]
        asked = len(server.requests)
        again, again_cells, again_all = _run(path, env)
        replay_calls = len(server.requests) - asked
        identical = _outputs(first) == _outputs(again)
        marked = all(REPLAYED in str(c.outputs[0].get("data", {}).get("text/plain", ""))
                     for c in again.cells)
        nbformat.write(again, path)  # type: ignore[no-untyped-call]
        offline = {**env, "LILY_API_BASE": "http://127.0.0.1:9/v1", "LILY_EVENT_LOG": "0"}
        offline.pop("OPENAI_API_KEY")
        nbval = subprocess.run(
            [sys.executable, "-m", "pytest", "--nbval", str(path), "--nbval-kernel-name",
             "lily", "-p", "no:cacheprovider", "-q"], cwd=workspace, env=offline,
            capture_output=True, text=True, timeout=600)
        follows = _follow_up(workspace, env, turns, server)
    print(f"| first run (model, {delay} s an answer) | {asked} | {first_cells:.2f} s | "
          f"{first_all:.2f} s | |")
    print(f"| Run All after a restart | {replay_calls} | {again_cells:.2f} s "
          f"(**{100 * again_cells / first_cells:.1f}%**) | {again_all:.2f} s "
          f"({100 * again_all / first_all:.1f}%) | outputs identical but the replay line: "
          f"{identical}; every cell marked: {marked}; nbval with the model unreachable: "
          f"{'passed' if nbval.returncode == 0 else 'FAILED'} "
          f"({nbval.stdout.strip().splitlines()[-1] if nbval.stdout.strip() else ''}) |")
    print(f"| a follow-up after a reopen | 1 | | | the model received all {turns} earlier "
          f"turns in order: {follows} |")


def _record_sessions(workspace: Path, environ: dict[str, str], recorded: int) -> None:
    sessions = recorded // 20
    for s in range(sessions):
        runtime = LilyRuntime.start(workspace, environ,
                                    collaborators=Collaborators(record=NotebookRecord))
        for n in range(20):
            runtime.model = ScriptedModel(ChatResponse(text=f"Answer {s}.{n}",
                                                       usage=Usage(20, 10)))
            asyncio.run(runtime.run_cell(f"Session {s} question {n}", SilentSink()))
        runtime.close()


def _lookups(workspace: Path, environ: dict[str, str], session: int) -> list[float]:
    """A new session running one recorded conversation's 20 cells again, then a new
    one: the record's decision per cell, in milliseconds (`decide`, what the kernel runs
    off the event loop before a turn: the index, the key, the record's line read)."""
    began = time.perf_counter()
    runtime = LilyRuntime.start(workspace, environ,
                                collaborators=Collaborators(record=NotebookRecord))
    times = [1000 * (time.perf_counter() - began)]  # the session's start, the index read
    record = runtime.record
    assert isinstance(record, NotebookRecord)
    for n in [*range(20), -1]:
        code = f"Session {session} question {n}" if n >= 0 else "A new question"
        began = time.perf_counter()
        decision = record.decide(turn_inputs(runtime, TurnFacts(code, None, code, None)))
        times.append(1000 * (time.perf_counter() - began))
        assert (decision.found is not None) == (n >= 0), f"cell {n}"
        if n >= 0:  # the turn itself, answered from the record: the next cell's history
            runtime.model = ScriptedModel()  # (never asked)
            asyncio.run(runtime.run_cell(code, SilentSink()))
    runtime.close()
    return times


def lookup_part(root: Path, recorded: int) -> None:
    workspace = root / "lookup"
    workspace.mkdir()
    environ = {**bench_env(root / "home"), "LILY_EVENT_LOG": "1", "LILY_MODEL": "scripted/x",
               "LILY_SKILLS_BUNDLED_DIR": str(root / "no-skills")}
    began = time.perf_counter()
    _record_sessions(workspace, environ, recorded)
    made = time.perf_counter() - began
    logs = list((workspace / ".lily" / "sessions").glob("*.jsonl"))
    size = sum(p.stat().st_size for p in logs) / 1e6
    last = recorded // 20 - 1
    times = _lookups(workspace, environ, last)
    (workspace / ".lily" / "index.sqlite").unlink()
    rebuilt = _lookups(workspace, environ, last - 1)
    print(f"\n{recorded} recorded turns in {len(logs)} logs ({size:.1f} MB; made in "
          f"{made:.0f} s). The record's decision per cell, ms:\n")
    index = RecordIndex(workspace, writable=False)
    began = time.perf_counter()
    index.refresh()
    read = 1000 * (time.perf_counter() - began)
    print("| | index kept | index lost (rebuilt from the logs) |")
    print("|---|---|---|")
    print(f"| the session's start (the index read: {read:.1f} ms of it) | {times[0]:.1f} | "
          f"{rebuilt[0]:.1f} |")
    print(f"| first cell (replayed) | {times[1]:.2f} | {rebuilt[1]:.2f} |")
    print(f"| next 19 (replayed), median / max | {statistics.median(times[2:21]):.2f} / "
          f"{max(times[2:21]):.2f} | {statistics.median(rebuilt[2:21]):.2f} / "
          f"{max(rebuilt[2:21]):.2f} |")
    print(f"| a turn not recorded | {times[21]:.2f} | {rebuilt[21]:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--recorded", type=int, default=1000)
    parser.add_argument("--skip-kernel", action="store_true")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores\n")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        if not args.skip_kernel:
            print("| run | model calls | cells | with the kernel's start | |")
            print("|---|---|---|---|---|")
            kernel_part(root, args.turns, args.delay)
        lookup_part(root, args.recorded)


if __name__ == "__main__":
    main()
