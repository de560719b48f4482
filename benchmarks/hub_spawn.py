"""Benchmark: a person's Lily session spawned by JupyterHub against the same with the
plain python3 kernel, and what one person's Lily session costs in memory (issue 38).

    .venv/bin/python benchmarks/hub_spawn.py [--rounds 5]

One real hub (tests/hub/hub.py: docs/examples/jupyterhub_config.py, the pure-Python
proxy, `simple` spawner, a loopback model configured as the config passes it). Each
round spawns two new people, one per kernel, in alternating order, and times, through
the proxy as a browser would: the request to start the server, the server ready, a
notebook session created with the kernel, and over the kernel's websocket the first
cell's reply (`/skills` for Lily, `6*7` for python3), each server stopped after. The
ratio is of the medians, spawn to first reply.

Then one more person's Lily session does what the hub test does (`/skills`, `/python
6*7`, a chat cell with the loopback model), and the memory of each of their processes
is read: the single-user server, the Lily kernel, the Python kernel's sandbox
(bubblewrap) and the Python kernel; RSS and PSS (/proc/PID/smaps_rollup: shared pages
split among the processes mapping them). Linux only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.hub.hub import Hub, start_hub
from tests.hub.notebook_socket import NotebookSocket, text_of
from tests.support.openai_server import OpenAIServer, fresh_tokens

TIMEOUT = 300.0
FIRST_CELL = {"lily": "/skills", "python3": "6*7"}


def timed_session(hub: Hub, name: str, kernel: str) -> dict[str, float]:
    """Seconds from the spawn request to: the server ready, the session's kernel
    started, the first cell's reply."""
    start = time.perf_counter()
    hub.spawn(name, timeout=TIMEOUT)
    ready = time.perf_counter()
    session = hub.request("POST", f"{hub.server_path(name)}/api/sessions", {
        "path": "bench.ipynb", "name": "bench.ipynb", "type": "notebook",
        "kernel": {"name": kernel}}, timeout=TIMEOUT)
    started = time.perf_counter()
    with NotebookSocket(hub.ws_url(name, session["kernel"]["id"]), hub.token,
                        timeout=TIMEOUT) as ks:
        run = ks.cell(FIRST_CELL[kernel], "c-1")
    replied = time.perf_counter()
    if run.reply is None or run.reply["status"] != "ok":
        raise RuntimeError(f"{kernel}: the first cell failed: {run.reply} {text_of(run)}")
    return {"ready": ready - start, "kernel": started - start, "reply": replied - start}


def pss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no Pss line for {pid}")


def role(process: psutil.Process, server_pid: int) -> str:
    command = " ".join(process.cmdline())
    if process.pid == server_pid:
        return "single-user server"
    if process.name() == "bwrap":
        return "Python kernel's sandbox (bubblewrap)"
    if "janitor.py" in command:  # cleans up after the Lily kernel, however it ends
        return "Lily kernel's janitor"
    if "lily-bridge" in command:  # the sandbox's way out, to the session's proxy
        return "network bridge in the sandbox"
    if "ipykernel" in command:
        return "Python kernel (ipykernel)"
    if "lily_kernel" in command:
        return "Lily kernel"
    return f"other ({process.name()})"


def session_memory(hub: Hub, model: OpenAIServer) -> None:
    name = "memory"
    server = hub.spawn(name, timeout=TIMEOUT)
    session = hub.request("POST", f"{hub.server_path(name)}/api/sessions", {
        "path": "talk.ipynb", "name": "talk.ipynb", "type": "notebook",
        "kernel": {"name": "lily"}}, timeout=TIMEOUT)
    with NotebookSocket(hub.ws_url(name, session["kernel"]["id"]), hub.token,
                        timeout=TIMEOUT) as ks:
        for index, code in enumerate(("/skills", "/python 6*7", "Say hello.")):
            run = ks.cell(code, f"c-{index}")
            if run.reply is None or run.reply["status"] != "ok":
                raise RuntimeError(f"{code}: {run.reply} {text_of(run)}")
    if not model.requests:
        raise RuntimeError("the chat cell never reached the loopback model")
    pid = int(server["state"]["pid"])
    root = psutil.Process(pid)
    readings = []
    for process in [root, *root.children(recursive=True)]:
        readings.append((role(process, pid), process.memory_info().rss / 2**20,
                         pss_mib(process.pid)))
    print("\none person's Lily session after /skills, /python 6*7 and a chat cell:")
    for what, rss, pss in readings:
        print(f"  {what:<40} RSS {rss:7.1f} MiB  PSS {pss:7.1f} MiB")
    print(f"  {'together':<40} RSS {sum(r for _, r, _ in readings):7.1f} MiB  "
          f"PSS {sum(p for _, _, p in readings):7.1f} MiB")
    hub.stop_server(name, timeout=TIMEOUT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    times: dict[str, list[dict[str, float]]] = {"lily": [], "python3": []}
    with tempfile.TemporaryDirectory(prefix="lily-hub-") as folder, \
            OpenAIServer(default=fresh_tokens()) as model, \
            start_hub(Path(folder), LILY_MODEL="openai/loop",
                      LILY_API_BASE=model.base_url, OPENAI_API_KEY="sk-shared-key") as hub:
        for round_ in range(args.rounds):
            order = ("lily", "python3") if round_ % 2 == 0 else ("python3", "lily")
            for kernel in order:
                name = f"{kernel}-{round_}"
                times[kernel].append(timed_session(hub, name, kernel))
                hub.stop_server(name, timeout=TIMEOUT)
                print(f"round {round_ + 1} {kernel:>7}: " + ", ".join(
                    f"{k} {v:.2f} s" for k, v in times[kernel][-1].items()), flush=True)
        session_memory(hub, model)
    print(f"\nspawn to first reply through the hub, median of {args.rounds} (interleaved):")
    medians = {}
    for kernel, runs in times.items():
        medians[kernel] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(f"  {kernel:>7}: server ready {medians[kernel]['ready']:.2f} s, kernel "
              f"started {medians[kernel]['kernel']:.2f} s, first reply "
              f"{medians[kernel]['reply']:.2f} s")
    ratio = medians["lily"]["reply"] / medians["python3"]["reply"]
    print(f"  ratio Lily / python3, spawn to first reply: {ratio:.2f}x (goal <= 1.3x)")
    after = {k: medians[k]["reply"] - medians[k]["kernel"] for k in medians}
    print(f"  first cell after the session was created: Lily {after['lily']:.2f} s, "
          f"python3 {after['python3']:.2f} s")


if __name__ == "__main__":
    main()
