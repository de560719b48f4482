"""A small MCP server made with the official SDK, for the tests and benchmarks: a real
stdio server the Lily kernel starts.

    python tests/support/mcp_fixture_server.py [--marker FILE] [--crash-on-start]
                                               [--garbage] [--child TOKEN]

`--marker FILE`: a line is appended to FILE when it starts (the tests check that an
untrusted workspace's server never ran), and one when `hang` is called.
`--crash-on-start`: exits at once, before the protocol. `--garbage`: writes a line that
is not JSON-RPC to stdout first. `--child TOKEN`: starts a detached `sleep` whose
command line holds TOKEN (nothing may outlive the kernel). Tools: `echo`, `add`,
`hang` (never returns), `crash` (the process exits).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--marker")
    parser.add_argument("--crash-on-start", action="store_true")
    parser.add_argument("--garbage", action="store_true")
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.marker:
        with open(args.marker, "a") as out:
            out.write(f"started {os.getpid()}\n")
    if args.crash_on_start:
        print("fixture: crashing on purpose", file=sys.stderr)
        sys.exit(3)
    if args.garbage:
        sys.stdout.write("this is not JSON-RPC\n")
        sys.stdout.flush()
    if args.child:
        subprocess.Popen(["sh", "-c", f"sleep 300; : {args.child}"], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)

    from mcp.server.mcpserver import MCPServer

    app = MCPServer("lily-fixture")

    @app.tool()
    def echo(text: str) -> str:
        """Return the text as it was sent."""
        return text

    @app.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @app.tool()
    def hang() -> str:
        """Never return."""
        if args.marker:  # the call is in flight: the tests wait for this, not a while
            with open(args.marker, "a") as out:
                out.write(f"hanging {os.getpid()}\n")
        while True:
            time.sleep(1)

    @app.tool()
    def crash() -> str:
        """End the server process at once."""
        os._exit(7)

    app.run("stdio")


if __name__ == "__main__":
    main()
