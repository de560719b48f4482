"""Benchmark: an MCP server's tool called by Lily's model path against the SDK's client
calling the same server directly.

    .venv/bin/python benchmarks/mcp_tools.py [--calls 200]

The server is tests/support/mcp_fixture_server.py (the official SDK's, over stdio). Lily's
path is the one a model's tool call takes in the kernel: the session's gate
(`ToolGate.model_call`: the arguments parsed, the policy, the handler through
mcp_tools/ and the SDK's `Client`, the `tool_call` event, the redactor), the tool allowed
by lily.yaml. The baseline is `mcp.Client.call_tool` on its own connection to the same
server. Medians per call of `echo`. Goal: Lily <= 10 ms over.
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

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "support" / "mcp_fixture_server.py"
sys.path.insert(0, str(REPO))


async def direct(calls: int) -> list[float]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    times = []
    params = StdioServerParameters(command=sys.executable, args=[str(FIXTURE)])
    async with Client(stdio_client(params)) as client:
        await client.call_tool("echo", {"text": "warm"})
        for i in range(calls):
            began = time.perf_counter()
            result = await client.call_tool("echo", {"text": f"call {i}"})
            times.append(time.perf_counter() - began)
            assert result.content[0].text == f"call {i}"  # type: ignore[union-attr]
    return times


async def through_lily(workspace: Path, calls: int) -> list[float]:
    from lily_kernel.runtime.mcp_flow import start_mcp_servers
    from lily_kernel.runtime.runtime import LilyRuntime
    from lily_kernel.runtime.sink import SilentSink

    env = {k: v for k, v in os.environ.items() if not k.startswith("LILY_")}
    env.update(LILY_TRUST="workspace", LILY_EVENT_LOG="0", HOME=str(workspace / "home"))
    runtime = LilyRuntime.start(workspace, env, write_log=False)
    sink, times = SilentSink(), []
    try:
        await start_mcp_servers(runtime, sink)
        gate = runtime.gate

        async def call(text: str) -> str:
            return await gate.model_call(sink, "mcp__fx__echo", f'{{"text": "{text}"}}',
                                         offered=["mcp__fx__echo"], step=1, skill=None,
                                         skills=None)

        await call("warm")
        for i in range(calls):
            began = time.perf_counter()
            said = await call(f"call {i}")
            times.append(time.perf_counter() - began)
            assert said == f"call {i}", said
    finally:
        runtime.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        (workspace / "lily.yaml").write_text(
            f"mcp_servers:\n  fx:\n    command: {sys.executable}\n    args: [{FIXTURE}]\n"
            "tools:\n  allow: [read, list, mcp__fx__echo]\n")
        lily = statistics.median(asyncio.run(through_lily(workspace, args.calls)))
    sdk = statistics.median(asyncio.run(direct(args.calls)))
    print(f"the SDK's client, directly: median {sdk * 1000:.2f} ms")
    print(f"Lily's model path (the gate): median {lily * 1000:.2f} ms")
    print(f"over the SDK: {(lily - sdk) * 1000:.2f} ms (goal <= 10 ms); ratio {lily / sdk:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
