"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
tests/mcp_conformance/package-lock.json, installed by ./setup.sh) run as published
against `lily mcp --http` on a free loopback port: every server scenario passes but
those tests/mcp_conformance/expected-failures.yml lists, which are exactly those
docs/mcp.md lists, and each of those fails (a change either way is noticed).

The suite cannot send a header of its own (modelcontextprotocol/conformance#453), so it
reaches the server through a loopback proxy that adds the bearer token to each request
and passes everything else as sent (its DNS-rebinding scenario's `Host` and `Origin`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.kernel.conftest import REPO
from tests.kernel.mcp_http_server import header_proxy, lily_mcp_http
from tests.kernel.test_mcp_server import make_workspace

SUITE = REPO / "tests" / "mcp_conformance"
BASELINE = SUITE / "expected-failures.yml"
DOCS = REPO / "docs" / "mcp.md"
# The server scenarios `lily mcp --http` passes (docs/mcp.md says which and how).
PASSED = {"server-initialize", "ping", "logging-set-level", "tools-list",
          "tools-call-simple-text", "tools-call-error", "server-sse-multiple-streams",
          "resources-list", "prompts-list", "dns-rebinding-protection"}


def documented_failures() -> set[str]:
    """The scenarios docs/mcp.md's conformance table says Lily does not pass."""
    section = DOCS.read_text().split("### Conformance", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([a-z0-9-]+)`", section, re.MULTILINE))


def test_the_suites_server_scenarios_pass_but_the_listed_ones(tmp_path: Path) -> None:
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: the MCP conformance suite cannot run")
    cli = SUITE / "node_modules" / ".bin" / "conformance"
    assert cli.exists(), "the conformance suite is not installed: run ./setup.sh"
    expected = set(yaml.safe_load(BASELINE.read_text())["server"])
    assert documented_failures() == expected

    with lily_mcp_http(make_workspace(tmp_path), tmp_path / "home") as server, \
            header_proxy(server.url, f"Authorization: Bearer {server.token}") as url:
        run = subprocess.run([str(cli), "server", "--url", url, "--expected-failures",
                              str(BASELINE), "-o", str(tmp_path / "results")],
                             cwd=SUITE, capture_output=True, text=True, timeout=900)
    summary = run.stdout.split("=== SUMMARY ===")[-1]
    passed = set(re.findall(r"^✓ (\S+):", summary, re.MULTILINE))
    failed = set(re.findall(r"^✗ (\S+):", summary, re.MULTILINE))
    assert failed == expected, summary
    assert passed == PASSED, summary
    assert run.returncode == 0, summary + run.stderr[-2000:]
