"""The question in the cell (runtime/network_flow.py), with a real runtime and a stand-in
for the proxy: a tool whose handler decides a destination from another thread, as the
proxy's thread does, while the call awaits on the event loop. What the person reads and
answers, what the model reads, the `network` events and `/network`."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lily_kernel.errors import ToolRefusedError
from lily_kernel.events import Event
from lily_kernel.network.decisions import Destination, Finished
from lily_kernel.runtime.runtime import LilyRuntime
from lily_kernel.runtime.sink import SilentSink
from lily_kernel.tools import Tool, ToolContext, default_registry
from tests.support.sink import RecordingSink


@dataclass(frozen=True)
class ConnectArgs:
    host: str
    port: int = 443
    times: int = 1


async def _connect(args: ConnectArgs, ctx: ToolContext) -> str:
    """What the proxy does for each connection, from a thread of its own: decide, then
    report the ending (a refused one at once, an allowed one with its bytes)."""
    decisions = ctx.services.network.decisions  # type: ignore[union-attr]

    def one() -> str:
        destination = Destination(args.host, args.port)
        verdict = decisions.decide(destination)
        address = "203.0.113.7" if verdict.allowed else ""
        decisions.report(Finished(destination, verdict, address, 10 * verdict.allowed,
                                  100 * verdict.allowed))
        return "connected" if verdict.allowed else "403"

    said = await asyncio.gather(*(asyncio.to_thread(one) for _ in range(args.times)))
    return " ".join(said)


def _runtime(workspace: Path, environ: dict[str, str], events: list[Event],
             lily_yaml: str = "") -> LilyRuntime:
    if lily_yaml:
        (workspace / "lily.yaml").write_text(lily_yaml)
    registry = default_registry()
    registry.register(Tool("connect", "connect somewhere", ConnectArgs, _connect))
    return LilyRuntime.start(workspace, environ, registry=registry, listener=events.append)


def _call(runtime: LilyRuntime, sink: Any, host: str, times: int = 1, port: int = 443
          ) -> str:
    outcome = asyncio.run(runtime.gate.run(
        sink, "connect", {"host": host, "port": port, "times": times}, "model"))
    return outcome.text


def _kinds(events: list[Event], *kinds: str) -> list[tuple[str, dict[str, Any]]]:
    return [(e.event, e.data) for e in events if e.event in kinds]


def test_an_unnamed_host_is_asked_in_the_cell_once_for_its_connections(
        workspace: Path, environ: dict[str, str]) -> None:
    events: list[Event] = []
    runtime = _runtime(workspace, environ, events)
    sink = RecordingSink("y")
    assert _call(runtime, sink, "example.org", times=4) == "connected " * 3 + "connected"
    [question] = sink.questions  # four connections, one question
    assert question.startswith('Network: "connect" wants to connect to "example.org" port 443.')
    assert "can send workspace data there" in question and question.endswith("[y/N/a] ")
    logged = _kinds(events, "approval", "network", "tool_call")
    assert [kind for kind, _ in logged] == ["approval", *["network"] * 4, "tool_call"]
    assert logged[0][1]["outcome"] == "approved"
    assert sorted(d["decided_by"] for _, d in logged[1:5]) == ["person", *["session"] * 3]
    assert logged[1][1]["tool"] == "connect" and logged[1][1]["bytes_received"] == 100
    # y holds for that tool call only: the next call asks again
    again = RecordingSink("n")
    text = _call(runtime, again, "example.org")
    assert len(again.questions) == 1 and text.startswith("403")
    refusal = ("blocked by Lily's network policy: example.org (the person declined it for "
               "this run)")
    assert refusal in text  # the model reads why
    assert again.notices[-1] == f"Network: {refusal}"  # and the person, in one line


def test_always_opens_the_host_for_the_session_and_network_lists_it(
        workspace: Path, environ: dict[str, str]) -> None:
    events: list[Event] = []
    runtime = _runtime(workspace, environ, events, "network:\n  deny: [evil.org]\n")
    assert _call(runtime, RecordingSink("a"), "example.org") == "connected"
    quiet = RecordingSink()
    assert _call(runtime, quiet, "example.org") == "connected"
    assert quiet.questions == []
    denied = RecordingSink("y")
    assert _call(runtime, denied, "evil.org").startswith("403")
    assert denied.questions == []  # deny wins, no one is asked
    shown = RecordingSink()
    asyncio.run(runtime.run_cell("/network", shown))
    [result] = shown.values
    from lily_kernel.display import render_plain

    text = render_plain(result)  # type: ignore[arg-type]
    assert "evil.org" in text and "(none)" in text  # deny listed, allow empty
    assert "example.org" in text and "allowed" in text and "session" in text
    assert "refused" in text and "policy" in text


def test_no_one_to_ask_refuses_and_says_why(workspace: Path,
                                            environ: dict[str, str]) -> None:
    events: list[Event] = []
    runtime = _runtime(workspace, environ, events)
    notebook = RecordingSink()  # nbclient: no input requests
    text = _call(runtime, notebook, "example.org")
    assert "blocked by Lily's network policy: example.org (not allowed; ask the person or " \
           "add it to network.allow; no one could be asked: this notebook runs without " \
           "input requests" in text
    mcp = SilentSink("an MCP client's call cannot ask the person")
    assert "an MCP client's call cannot ask the person" in _call(runtime, mcp, "example.org")
    [first, second] = _kinds(events, "network")
    assert first[1]["decided_by"] == second[1]["decided_by"] == "no-answer"


def test_full_auto_refuses_a_host_nobody_named(workspace: Path,
                                               environ: dict[str, str]) -> None:
    events: list[Event] = []
    runtime = _runtime(workspace, {**environ, "LILY_POLICY": "auto",
                                   "LILY_NETWORK_ALLOW": "pypi.org"}, events)
    sink = RecordingSink("y")
    text = _call(runtime, sink, "example.org")
    assert sink.questions == []
    assert "full auto opens no host that network.allow does not name" in text
    assert _call(runtime, sink, "pypi.org") == "connected"
    shown = RecordingSink()
    asyncio.run(runtime.run_cell("/policy", shown))
    from lily_kernel.display import render_plain

    said = render_plain(shown.values[0])  # type: ignore[arg-type]
    assert "Hosts network.allow does not name are refused, not asked" in said


def test_an_untrusted_folders_allow_is_held_so_its_host_is_asked(
        workspace: Path, environ: dict[str, str]) -> None:
    events: list[Event] = []
    untrusted = {k: v for k, v in environ.items() if k != "LILY_TRUST"}
    runtime = _runtime(workspace, untrusted, events, "network:\n  allow: [example.org]\n")
    sink = RecordingSink("n")
    assert _call(runtime, sink, "example.org").startswith("403")
    assert len(sink.questions) == 1
    assert any(line.startswith("network.allow: example.org")
               for line in runtime.env.held_settings)


def test_a_stopped_call_withdraws_its_question(workspace: Path,
                                               environ: dict[str, str]) -> None:
    """The stop button while the person is asked: the question is withdrawn (an
    `interrupted` approval), the connection refused, the proxy's thread not left waiting."""
    events: list[Event] = []
    runtime = _runtime(workspace, environ, events)

    class Hanging(RecordingSink):
        async def ask(self, question: str) -> str | None:
            self.questions.append(question)
            await asyncio.Event().wait()  # no answer, ever
            return None

    async def stopped() -> None:
        sink = Hanging()
        call = asyncio.ensure_future(runtime.gate.run(
            sink, "connect", {"host": "example.org"}, "model"))
        while not sink.questions:
            await asyncio.sleep(0.01)
        call.cancel()
        with pytest.raises((asyncio.CancelledError, ToolRefusedError)):
            await call

    asyncio.run(stopped())
    approvals = _kinds(events, "approval")
    assert [d["outcome"] for _, d in approvals] == ["interrupted"]
