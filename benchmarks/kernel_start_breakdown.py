"""Where a Lily kernel's start goes: time and resident memory per stage, 1,000 skills.

    .venv/bin/python benchmarks/kernel_start_breakdown.py [--runs 7] [--skills 1000]

Each run is a fresh interpreter that goes through the stages a Lily kernel goes
through before its first `/skills` reply, in order, timing each (perf_counter) and
reading its RSS growth (/proc/self/statm, so Linux only: psutil, which the other
benchmarks use from outside the kernel, would load modules into the measured process
and move the figures). The python3 kernel's own extra stages (debugpy, which
`IPythonKernel` imports as it is built, and its IPython shell) are timed the same way,
so the two kernels' budgets can be compared stage by stage. These are isolated,
single-threaded costs: the shared app initialisation (sockets, threads) is in neither
column, and in a running kernel python3's debugpy import overlaps its channel threads
and costs somewhat more. Medians over --runs; a second pass runs Lily's stages with the
cyclic garbage collector paused, to show its share.
This explains kernel_start.py and kernel_memory.py; it sets no target of its own.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_common import bench_env, generate_workspace, median

# Run in a fresh interpreter; prints one JSON object {stage: [ms, MiB]}.
_STAGES = r"""
import gc, json, os, sys, time
if sys.argv[2] == "nogc":
    gc.disable()
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
stages, last = {}, [time.perf_counter(), rss()]
def stage(name):
    now, mem = time.perf_counter(), rss()
    stages[name] = [(now - last[0]) * 1000, mem - last[1]]
    last[:] = [time.perf_counter(), rss()]
import ipykernel.kernelapp
stage("ipykernel.kernelapp (both kernels)")
if sys.argv[1] == "lily":
    from lily_kernel.runtime.runtime import LilyRuntime
    stage("Lily's modules")
    from pathlib import Path
    runtime = LilyRuntime.start(Path(sys.argv[3]))
    stage("session start (config, persona, skills)")
    from lily_kernel.commands import parse_command
    from lily_kernel.display import bundle
    result = runtime.run_command(parse_command("/skills"))
    shown = bundle(result)  # kept alive, as the kernel holds it while sending
    stage("/skills result and its three renderings")
    # Measure the real path: every generated skill loaded, the command succeeded.
    assert result.ok, result.error
    assert len(runtime.session.skill_snapshot.skills) >= int(sys.argv[4])
    assert "pydantic" not in sys.modules  # the start path stays without it
    assert "yaml" not in sys.modules  # plain frontmatter only (skills/plain_frontmatter.py)
else:
    from ipykernel.zmqshell import ZMQInteractiveShell  # already imported by kernelapp
    import ipykernel.debugger
    stage("ipykernel.debugger (debugpy)")
    shell = ZMQInteractiveShell.instance()
    stage("its IPython shell")
print(json.dumps(stages))
"""


def run_stages(kind: str, gc_mode: str, workspace: Path, skills: int,
               env: dict[str, str]) -> dict[str, list[float]]:
    done = subprocess.run(
        [sys.executable, "-c", _STAGES, kind, gc_mode, str(workspace), str(skills)],
        env=env, cwd=workspace, capture_output=True, text=True,
    )
    if done.returncode:
        raise RuntimeError(f"the {kind} stages failed:\n{done.stderr}")
    stages: dict[str, list[float]] = json.loads(done.stdout)
    return stages


def report(title: str, runs: list[dict[str, list[float]]]) -> None:
    print(title)
    total_ms = total_mib = 0.0
    for name in runs[0]:
        ms = median([r[name][0] for r in runs])
        mib = median([r[name][1] for r in runs])
        total_ms, total_mib = total_ms + ms, total_mib + mib
        print(f"  {name:45s} {ms:7.1f} ms  {mib:+6.2f} MiB")
    print(f"  {'total':45s} {total_ms:7.1f} ms  {total_mib:+6.2f} MiB")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--skills", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = generate_workspace(Path(tmp), args.skills)
        env = bench_env(Path(tmp) / "home")
        run_stages("lily", "gc", workspace, args.skills, env)  # warm the page cache and .pyc files
        results: dict[tuple[str, str], list[dict[str, list[float]]]] = {}
        for _ in range(args.runs):
            for key in (("lily", "gc"), ("python3", "gc"), ("lily", "nogc")):
                results.setdefault(key, []).append(
                    run_stages(*key, workspace, args.skills, env))
    print(f"{args.skills} skills in the workspace, medians of {args.runs} fresh interpreters")
    report("Lily, up to its first /skills reply:", results[("lily", "gc")])
    report("python3, up to its first kernel_info reply:", results[("python3", "gc")])
    report("Lily with the cyclic GC paused:", results[("lily", "nogc")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
