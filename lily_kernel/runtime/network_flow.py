"""The network's side of the session: its host decisions (network/asking.py) put to the
person in the cell of the tool call that runs, and what the proxy reported written to
the log, on the runtime's own thread.

The proxy decides on a thread of its own while the tool call awaits its run on the
event loop. A question hops to the loop (`run_coroutine_threadsafe`): the cell's sink,
and so Jupyter's stdin socket, is only ever used from the loop's thread, and the
proxy's thread waits for the answer. When the call ends (its run finished, or the stop
button), a question still open is withdrawn (answered no), the connections it made are
given a moment to end, and their `network` events are written before the call's own
`tool_call` event; a refused host leaves one line in the cell.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import AsyncIterator, Callable

from lily_kernel.display import Notice
from lily_kernel.display.network import NetworkOverview, SeenHost, host_blocked, host_question
from lily_kernel.environment import Workspace
from lily_kernel.events import Approval, EventLog
from lily_kernel.network.asking import Answer, HostDecisions, ToolCall
from lily_kernel.network.decisions import Destination
from lily_kernel.network.policy import NetworkPolicy
from lily_kernel.runtime.approval import answer_of
from lily_kernel.runtime.sink import CellSink, SilentSink
from lily_kernel.tools import PolicyState

__all__ = ["SETTLE_SECONDS", "SessionNetwork"]

# After a tool call's run, how long the connections it made have to end before its
# events are written (a connection the code keeps open is written when it ends).
SETTLE_SECONDS = 1.0
# Why no one answers in a notebook without input requests (nbclient, `lily run`).
NO_STDIN = "this notebook runs without input requests (nbclient, papermill, `lily run`)"


class SessionNetwork:
    """One session's host decisions over the workspace in force and the person's profile,
    and the log their events go to."""

    def __init__(self, workspace: Callable[[], Workspace], policy_state: PolicyState,
                 log: EventLog) -> None:
        self.workspace, self.log = workspace, log
        self._policies: tuple[Workspace, NetworkPolicy] | None = None
        self.decisions = HostDecisions(self.policy, lambda: policy_state.profile == "auto")
        self._profile = policy_state

    def policy(self) -> NetworkPolicy:
        """The lists of the workspace in force (read again when a new one is taken up)."""
        env, known = self.workspace(), self._policies
        if known is None or known[0] is not env:
            known = self._policies = env, NetworkPolicy.from_config(env.config.network)
        return known[1]

    @contextlib.asynccontextmanager
    async def call(self, sink: CellSink, tool: str, skill: str | None
                   ) -> AsyncIterator[ToolCall]:
        """Around one tool call's run: the connections it makes may ask in its cell."""
        loop, thread = asyncio.get_running_loop(), threading.get_ident()
        asking: set[concurrent.futures.Future[Answer]] = set()
        call: ToolCall

        def ask(destination: Destination) -> Answer:
            if threading.get_ident() == thread:  # never wait on the loop from the loop
                return None
            future = asyncio.run_coroutine_threadsafe(
                self._question(sink, call, destination), loop)
            asking.add(future)
            try:
                return future.result()
            except (concurrent.futures.CancelledError, RuntimeError):
                return None  # withdrawn: the call ended, or the loop did
            finally:
                asking.discard(future)

        call = ToolCall(tool, skill, ask)
        self.write_events(None)  # what ended between calls, before this call's own
        self.decisions.begin(call)
        try:
            yield call
        finally:
            self.decisions.end(call)
            for future in list(asking):
                future.cancel()
            try:
                await self._settle(call)
            finally:
                self.write_events(sink)

    async def _question(self, sink: CellSink, call: ToolCall, destination: Destination
                        ) -> Answer:
        """The question, asked on the loop's thread; an `approval` event, as every
        question to the person is (replay answers it as the person did)."""
        files_from = tuple(d.host for d in self.policy().asked_with(destination))
        text = host_question(destination.host, destination.port, call.tool, call.skill,
                             files_from)
        try:
            reply = await sink.ask(text)
        except asyncio.CancelledError:
            self.log.emit(Approval(tool=call.tool, question=text, outcome="interrupted"))
            raise
        self.log.emit(Approval(tool=call.tool, question=text,
                               outcome=answer_of(reply, always=True)))
        if reply is None:
            nobody = sink.nobody if isinstance(sink, SilentSink) else None
            call.nobody = nobody or NO_STDIN
        return reply

    async def _settle(self, call: ToolCall) -> None:
        """A moment for the call's connections to end (its run's processes are gone, so
        the proxy sees them close), bounded."""
        deadline = asyncio.get_running_loop().time() + SETTLE_SECONDS
        while (self.decisions.open_connections(call) > 0
               and asyncio.get_running_loop().time() < deadline):
            await asyncio.sleep(0.01)

    def write_events(self, sink: CellSink | None) -> None:
        """The `network` events queued since the last write, in order; with `sink`, one
        line in the cell for each host refused."""
        said: set[str] = set()
        for event in self.decisions.take_events():
            self.log.emit(event)
            if sink is not None and not event.allowed and event.reason not in said:
                said.add(event.reason)
                sink.show(Notice(host_blocked(event.reason)))

    def overview(self) -> NetworkOverview:
        """What `/network` shows."""
        self.write_events(None)
        env, config = self.workspace(), self.workspace().config.network
        held = tuple(line for line in env.held_settings if line.startswith("network.allow"))
        hosts = tuple(SeenHost(host, port, seen.allowed, seen.decided_by, seen.connections,
                               seen.bytes_sent, seen.bytes_received)
                      for (host, port), seen in self.decisions.seen_hosts())
        return NetworkOverview(config.allow, config.deny, held,
                               self._profile.profile == "auto", hosts)
