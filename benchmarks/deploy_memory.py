"""Benchmark: memory of N Lily kernels on one machine, idle and after one chat cell each.

    .venv/bin/python benchmarks/deploy_memory.py [--kernels 10] [--model embedded|loopback]
        [--context-window N]

Starts N Lily kernels side by side (bundled skills), runs `/skills` in each, reads every
kernel's RSS and PSS, then runs one chat cell in each and reads them again. PSS
(/proc/PID/smaps_rollup) splits each shared page among the processes mapping it, so
the PSS of N kernels adds up to what they take together, where RSS counts shared pages
(the embedded model's memory-mapped weights, shared libraries) once per kernel.
--model embedded: nothing configured, the embedded local model answers; loopback: a
litellm model against a scripted loopback server (the path any provider takes).
Each reading waits until the kernels' memory stops moving (a kernel with a litellm model
imports litellm in the background once idle). The machine's MemAvailable before and
after is printed as a cross-check (noisy on a shared machine). Linux only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kernel_common import Kernel, bench_env, started

from tests.support.openai_server import OpenAIServer, Reply

QUESTION = "Say hello in one short sentence."


def pss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no Pss line for {pid}")


def gguf_mib(pid: int) -> tuple[float, float]:
    """RSS and PSS of the kernel's memory-mapped GGUF files (the embedded model's weights)."""
    rss = pss = 0
    in_gguf = False
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if not fields[0].endswith(":"):  # a mapping's header line: address, perms, ..., path
            in_gguf = fields[-1].endswith(".gguf")
        elif in_gguf and fields[0] == "Rss:":
            rss += int(fields[1])
        elif in_gguf and fields[0] == "Pss:":
            pss += int(fields[1])
    return rss / 1024, pss / 1024


def available_mib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no MemAvailable")


def settle(kernels: list[Kernel], limit: float = 60.0) -> None:
    """Wait until the kernels' memory stops moving (2 s within 1 MiB, at most `limit` s):
    a kernel with a litellm model imports it in the background once idle."""
    began = time.monotonic()
    history: list[float] = []
    while time.monotonic() - began < limit:
        history.append(sum(psutil.Process(k.pid).memory_info().rss for k in kernels) / 2**20)
        if len(history) > 4 and max(history[-5:]) - min(history[-5:]) < 1.0:
            return
        time.sleep(0.5)


def report(label: str, kernels: list[Kernel], baseline: float) -> None:
    settle(kernels)
    rss = [psutil.Process(k.pid).memory_info().rss / 2**20 for k in kernels]
    pss = [pss_mib(k.pid) for k in kernels]
    print(f"{label}: RSS per kernel median {statistics.median(rss):.1f} MiB "
          f"(min {min(rss):.1f}, max {max(rss):.1f}); PSS per kernel median "
          f"{statistics.median(pss):.1f} MiB")
    print(f"{label}: {len(kernels)} kernels together: RSS sum {sum(rss):.0f} MiB, "
          f"PSS sum {sum(pss):.0f} MiB, MemAvailable down {baseline - available_mib():.0f} MiB")
    weights = [gguf_mib(k.pid) for k in kernels]
    if any(r for r, _ in weights):
        print(f"{label}: of which the mapped GGUF weights: RSS {weights[0][0]:.1f} MiB in "
              f"each kernel, PSS sum {sum(p for _, p in weights):.1f} MiB (one shared copy)")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kernels", type=int, default=10)
    parser.add_argument("--model", choices=("embedded", "loopback"), default="embedded")
    parser.add_argument("--context-window", type=int, default=None,
                        help="LILY_CONTEXT_WINDOW for the kernels (embedded: its KV cache)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, OpenAIServer() as server, ExitStack() as stack:
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        env = bench_env(Path(tmp) / "home")
        env["LILY_MAX_TOKENS"] = "32"
        if args.context_window:
            env["LILY_CONTEXT_WINDOW"] = str(args.context_window)
        if args.model == "loopback":
            env.update(LILY_MODEL="openai/bench", LILY_API_BASE=server.base_url,
                       OPENAI_API_KEY="sk-bench-not-a-real-key")
        baseline = available_mib()
        kernels = [stack.enter_context(started("lily", workspace, env))
                   for _ in range(args.kernels)]
        for kernel in kernels:
            kernel.execute("/skills")
        report("idle after /skills", kernels, baseline)
        for kernel in kernels:
            server.script(Reply(text="Hello there."))
            kernel.execute(QUESTION)
        report(f"after one chat cell ({args.model} model)", kernels, baseline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
