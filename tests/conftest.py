"""Shared test setup: the network guard and small helpers for building skill trees."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import layers, parallel

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _is_loopback(address: object) -> bool:
    if not isinstance(address, tuple) or not address:
        return True  # AF_UNIX paths and other local families
    host = str(address[0])
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False  # a host name other than localhost would need DNS: refuse


class NetworkAccessError(AssertionError):
    """A test tried to reach a non-loopback address."""


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail any test that connects anywhere but 127.0.0.0/8, ::1 or a local socket."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guarded(sock: socket.socket, address: object) -> object:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address):
            raise NetworkAccessError(f"test tried to reach the network: {address!r}")
        return real_connect(sock, address)  # type: ignore[arg-type]

    def guarded_ex(sock: socket.socket, address: object) -> object:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address):
            raise NetworkAccessError(f"test tried to reach the network: {address!r}")
        return real_connect_ex(sock, address)  # type: ignore[arg-type]

    def guarded_getaddrinfo(host: object, *args: object, **kwargs: object) -> object:
        if host not in (None, "localhost") and not _is_loopback((host,)):
            raise NetworkAccessError(f"test tried to resolve {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]

    real_getaddrinfo = socket.getaddrinfo
    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_ex)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
    yield


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "embedded: the test may use the embedded local model (and the sentence "
        "encoder of the `local` extra) when installed")
    layers.watch_kernel_starts()


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`slow` on every test that starts a real kernel, subkernel, browser, gateway or
    benchmark (tests/support/layers.py says how they are found); under pytest-xdist
    (./test.sh), each slow module's tests kept on one worker, the slow ones first."""
    for item in items:
        if layers.is_slow(item):
            item.add_marker(pytest.mark.slow)
    parallel.arrange(items)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    layers.now_running(item)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int,
                            config: pytest.Config) -> None:
    layers.summarise(terminalreporter, config)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    parallel.report_to_controller(session.config, layers.unmarked_starts())
    if layers.unmarked_starts() and session.exitstatus == 0:
        session.exitstatus = 1  # a fast run that starts kernels is a failure of the layers


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """A pytest-xdist worker ended: its kernel starts outside `slow` tests count here."""
    layers.add_unmarked_starts(parallel.worker_report(node))


@pytest.fixture(autouse=True)
def _embedded_model_hidden(request: pytest.FixtureRequest,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process sessions see no embedded model unless the test is marked `embedded`:
    with nothing configured they report "no model configured", as without the extra, and
    skills are ranked by their words alone (no sentence encoder).
    (Kernel processes are not affected; tests/support/hide_local_model does that.)"""
    if request.node.get_closest_marker("embedded") is None:
        monkeypatch.setattr("lily_kernel.environment.find_embedded_model",
                            lambda: None)
        monkeypatch.setattr("lily_kernel.skills.embedding.find_encoder_files", lambda: None)


@pytest.fixture(autouse=True)
def _private_home(tmp_path_factory: pytest.TempPathFactory,
                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test's HOME is a folder of its own: the person's ~/.agents/skills,
    ~/.claude/skills and ~/.lily never leak into a test (or a test into them)."""
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    # The suite runs as CI does, with no one to answer the trust question: the
    # workspaces it builds are trusted for the process (LILY_TRUST, docs/skills.md).
    # tests/core/test_trust.py and tests/llm/test_kernel_trust.py take it away.
    monkeypatch.setenv("LILY_TRUST", "workspace")


def write_skill(root: Path, name: str, text: str) -> Path:
    """Create `root/name/SKILL.md` with `text`; return the file."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "SKILL.md"
    path.write_text(text, encoding="utf-8")
    return path


def skill_text(summary: str, **keys: str) -> str:
    lines = [f"summary: {summary}"] + [f"{k}: {v}" for k, v in keys.items()]
    return "---\n" + "\n".join(lines) + "\n---\n\nBody of " + summary + "\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder (the notebook's folder)."""
    path = tmp_path / "workspace"
    path.mkdir()
    return path


@pytest.fixture
def environ(tmp_path: Path) -> dict[str, str]:
    """An environment with its own Lily home and an empty bundled root: no leaks."""
    home = tmp_path / "home"
    bundled = tmp_path / "bundled"
    home.mkdir()
    bundled.mkdir()
    # HOME is the test's private one (_private_home), as a replay in this process sees it.
    return {"HOME": os.environ["HOME"], "LILY_HOME": str(home / ".lily"),
            "LILY_SKILLS_BUNDLED_DIR": str(bundled),
            "PATH": "/usr/bin:/bin", "LILY_EVENT_LOG": "0", "LILY_TRUST": "workspace"}
