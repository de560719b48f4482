"""One MCP server, connected with the official SDK's `Client`: started, its tools listed,
called, ended.

The SDK speaks the protocol (the `server/discover` probe, else the initialize handshake;
stdio and streamable HTTP). What Lily adds is the life around it. A stdio server starts
where mcp_tools/launch.py says (the person's outside the workspace), and runs
through execution/reaper.py with `--die-with`: it ends when the kernel's event-loop
thread does, `kill -9` included, with everything it started; and `close` ends it at once
(its process group) without waiting on the SDK. The SDK's context is entered and left by
one task of its own (anyio's scopes belong to the task that opened them); calls come
from the cells' tasks meanwhile. Each start and call has the server's time limit; a
start that fails, times out or breaks the protocol is a `McpServerError` saying which.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lily_kernel.errors import ToolError
from lily_kernel.execution.folders import make_private_folder
from lily_kernel.execution.sandbox import REAPER
from lily_kernel.mcp_tools.launch import plan_launch
from lily_kernel.mcp_tools.servers import McpServer

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import CallToolResult
    from mcp_types import Tool as McpTool

__all__ = ["McpConnection", "McpServerError", "State"]

State = Literal["not started", "running", "failed", "ended"]
STDERR_FILE = "stderr.log"
WORK_FOLDER = "work"  # the person's servers' working folder, empty (mcp_tools/launch.py)


class McpServerError(ToolError):
    """A server that could not start, stopped answering, or broke the protocol."""


def _reason(exc: BaseException) -> str:
    """One line for what went wrong (the SDK's exception groups unwrapped)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) < 300 else text[:297] + "..."


class McpConnection:
    """A configured server and, once started, its SDK client and tools."""

    def __init__(self, server: McpServer, workspace: Path, environ: Mapping[str, str]) -> None:
        self.server = server
        self.workspace = workspace
        self.environ = environ
        self.state: State = "not started"
        self.error: str | None = None
        self.tools: tuple[McpTool, ...] = ()
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._closing: asyncio.Event | None = None
        self._folder: Path | None = None

    @property
    def timeout(self) -> float:
        return self.server.config.timeout

    def _transport(self, errlog: Any) -> Any:
        """The SDK transport to the server: its command over stdio (through the reaper,
        stderr to `errlog`), or streamable HTTP (or SSE) with the configured headers."""
        config = self.server.config
        if self.server.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            assert self._folder is not None
            launch = plan_launch(self.server, self.workspace, self.environ,
                                 self._folder / WORK_FOLDER)
            return stdio_client(StdioServerParameters(
                command=sys.executable,
                args=["-I", "-S", str(REAPER), "--die-with", str(os.getpid()),
                      "--pid-file", str(self._folder / "pid"), launch.command, *config.args],
                # The SDK passes HOME, PATH, SHELL, TERM, USER, LOGNAME of this process
                # and adds these: never the kernel's whole environment (API keys).
                env=launch.env, cwd=str(launch.cwd)), errlog=errlog)
        assert config.url is not None
        if self.server.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(config.url, headers=dict(config.headers))
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        return streamable_http_client(
            config.url, http_client=create_mcp_http_client(headers=dict(config.headers)))

    async def start(self) -> None:
        """Connect and list the tools; raises McpServerError (state `failed`)."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        self._closing = asyncio.Event()
        if self.server.transport == "stdio":
            # Private (0700): its pid file, its stderr, and an empty folder for the
            # person's servers to run in (mcp_tools/launch.py); named after this process,
            # so the next Lily removes it when this one was killed before it could.
            self._folder = make_private_folder("mcp")
            (self._folder / WORK_FOLDER).mkdir()
        # Started on the event loop's thread: the server dies with that thread.
        self._task = asyncio.create_task(self._serve(ready), name=f"mcp {self.server.name}")
        try:
            async with asyncio.timeout(self.timeout):
                await asyncio.shield(ready)
        except TimeoutError:
            self._failed(f"no answer within {self.timeout:g} s")
            raise McpServerError(self.error or "") from None
        except asyncio.CancelledError:
            self.close()
            raise
        except Exception as exc:  # noqa: BLE001 - the SDK's, the transport's: one line
            self._failed(_reason(exc))
            raise McpServerError(self.error or "") from None

    async def _serve(self, ready: asyncio.Future[None]) -> None:
        from mcp import Client

        assert self._closing is not None
        try:
            with self._stderr() as errlog:
                async with Client(self._transport(errlog),
                                  read_timeout_seconds=self.timeout) as client:
                    self.tools = await _all_tools(client)
                    self._client, self.state = client, "running"
                    ready.set_result(None)
                    await self._closing.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else
                                    McpServerError(_reason(exc)))
            elif self.state == "running":
                self._failed(f"the connection ended: {_reason(exc)}")
            if not isinstance(exc, Exception):
                raise
        finally:
            self._client = None

    @contextlib.contextmanager
    def _stderr(self) -> Any:
        """Where a stdio server's stderr goes: a file of its own (it would otherwise
        write into the kernel's log), read back when it fails."""
        if self._folder is None:
            yield sys.stderr
            return
        with open(self._folder / STDERR_FILE, "w", encoding="utf-8") as log:
            yield log

    def _failed(self, reason: str) -> None:
        said = self._said_on_stderr()
        self.state, self.error = "failed", reason + (f" (it said: {said})" if said else "")
        self.close(state="failed")

    def _said_on_stderr(self) -> str:
        if self._folder is None:
            return ""
        with contextlib.suppress(OSError):
            lines = (self._folder / STDERR_FILE).read_text(errors="replace").strip()
            return " ".join(lines.splitlines()[-1:])[:200]
        return ""

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call `tool`; raises McpServerError when the server does not answer in time or
        the connection is gone. A cancelled call (the stop button) is cancelled here too."""
        client = self._client
        if client is None or self.state != "running":
            raise McpServerError(f"MCP server '{self.server.name}' is not running"
                                 + (f" ({self.error})" if self.error else ""))
        try:
            async with asyncio.timeout(self.timeout):  # (wait_for can lose a stop on 3.11)
                return await client.call_tool(tool, arguments)
        except TimeoutError:
            raise McpServerError(f"MCP server '{self.server.name}' did not answer within "
                                 f"{self.timeout:g} s") from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a broken connection, a protocol error
            from mcp_types import CONNECTION_CLOSED

            if getattr(exc, "code", None) == CONNECTION_CLOSED:  # the server is gone
                self._failed(f"the connection ended: {_reason(exc)}")
                raise McpServerError(f"MCP server '{self.server.name}' stopped: "
                                     f"{self.error}") from None
            raise McpServerError(f"MCP server '{self.server.name}': {_reason(exc)}") from None

    def close(self, state: State = "ended") -> None:
        """End the server now: its process group (a stdio server), then the SDK's task."""
        if self.state == "running":
            self.state = state
        folder, self._folder = self._folder, None
        if folder is not None:
            with contextlib.suppress(OSError, ValueError):
                os.killpg(int((folder / "pid").read_text()), signal.SIGTERM)
            shutil.rmtree(folder, ignore_errors=True)
        if self._closing is not None:
            self._closing.set()
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()


async def _all_tools(client: Client) -> tuple[McpTool, ...]:
    """Every page of `tools/list`."""
    tools: list[McpTool] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tuple(tools)
