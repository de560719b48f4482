"""Benchmark: Lily's per-turn overhead over a raw litellm call to the same server.

    .venv/bin/python benchmarks/conversation_overhead.py [--turns 60]

A loopback OpenAI-compatible server answers every request the same way. Lily runs a
chat turn with 1,000 skills in the catalog and 100 prior turns in the history; the
baseline is `litellm.acompletion` sent the very payload Lily sent (same messages, same
tools, same stream setting), consumed the same way. Overhead = median(Lily) -
median(raw), measured in the same process, alternating, for streaming on and off.
Target: at most 10 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lily_kernel.llm.litellm_model import import_litellm
from lily_kernel.runtime import LilyRuntime
from lily_kernel.runtime.sink import SilentSink
from tests.support.openai_server import OpenAIServer, Reply

ANSWER = "A short answer of about twenty words, streamed in a few chunks like a real reply."


def make_workspace(root: Path) -> Path:
    skills = root / "skills"
    for i in range(1000):
        folder = skills / f"skill-{i:04d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nsummary: Does task number {i} for the person, carefully.\n---\nBody {i}.\n")
    return root


async def measure(stream: bool, turns: int, server: OpenAIServer, workspace: Path) -> tuple[float, float]:
    os.environ["OPENAI_API_KEY"] = "sk-bench-not-a-real-key"  # litellm reads os.environ
    env = {**os.environ, "LILY_TRUST": "workspace", "LILY_MODEL": "openai/bench",
           "LILY_API_BASE": server.base_url,
           "LILY_STREAM": "1" if stream else "0", "LILY_HOME": str(workspace / "home"),
           "LILY_CATALOG_MAX_CHARS": "1000000"}  # all 1,000 skills in the catalog
    runtime = LilyRuntime.start(workspace, env)
    history = [m for i in range(100) for m in (
        {"role": "user", "content": f"Question {i}: how does part {i} work?"},
        {"role": "assistant", "content": f"Answer {i}: part {i} works like this, in detail."})]
    litellm = import_litellm()
    lily_times, raw_times = [], []
    for _ in range(turns + 3):
        # Lily: one full turn (prompt assembly, catalog, tools, call, history, events).
        runtime.session.conversation_state.messages = list(history)
        server.script(Reply(text=ANSWER, pieces=6))
        start = time.perf_counter()
        await runtime.run_cell("What should I do next?", SilentSink())
        lily_times.append(time.perf_counter() - start)
        sent = server.requests[-1]
        assert sent["messages"][0]["content"].count("\n- skill-") >= 1000  # one line a skill
        # Raw litellm: the same payload, consumed the same way.
        server.script(Reply(text=ANSWER, pieces=6))
        kwargs = dict(model="openai/bench", api_base=server.base_url, messages=sent["messages"],
                      tools=sent["tools"], max_retries=0, timeout=60,
                      api_key="sk-bench-not-a-real-key")
        start = time.perf_counter()
        if stream:
            response = await litellm.acompletion(stream=True,
                                                 stream_options={"include_usage": True}, **kwargs)
            chunks = [chunk async for chunk in response]
            litellm.stream_chunk_builder(chunks, messages=sent["messages"])
        else:
            await litellm.acompletion(**kwargs)
        raw_times.append(time.perf_counter() - start)
    runtime.close()
    # The first turns warm connections and caches; they are not counted.
    return statistics.median(lily_times[3:]) * 1000, statistics.median(raw_times[3:]) * 1000


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, OpenAIServer() as server:
        workspace = make_workspace(Path(tmp))
        for stream in (False, True):
            lily_ms, raw_ms = asyncio.run(measure(stream, args.turns, server, workspace))
            print(f"stream={'on ' if stream else 'off'}: Lily turn median {lily_ms:.1f} ms, "
                  f"raw litellm median {raw_ms:.1f} ms, overhead {lily_ms - raw_ms:+.1f} ms "
                  f"(target <= 10 ms); payload {len(str(server.requests[-1]['messages'])):,} chars")
    return 0


if __name__ == "__main__":
    sys.exit(main())
