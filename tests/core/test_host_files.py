"""Files sandboxed code could swap, as Lily opens them on the host: no link followed,
no FIFO waited on, only regular files; and the file tools, raced by a swapper thread
(what a thread left running in the session's Python kernel can do between Lily's
check and Lily's open), never read or write outside the workspace."""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lily_kernel.host_files import open_inside, read_inside, scan_inside, write_inside
from lily_kernel.tools import ToolContext, ToolPolicy, default_registry
from tests.support.gate import run_tool
from tests.support.repeating import repeating

HOST_SECRET = "host-secret-0123456789"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "notes.txt"
    secret.parent.mkdir()
    secret.write_text(HOST_SECRET)
    return secret


def test_a_link_anywhere_on_the_way_is_refused(workspace: Path, outside: Path) -> None:
    (workspace / "file-link").symlink_to(outside)
    (workspace / "folder-link").symlink_to(outside.parent)
    for rel, expected in (("file-link", errno.ELOOP), ("folder-link/notes.txt", errno.ENOTDIR)):
        with pytest.raises(OSError) as caught:
            read_inside(workspace, rel, 100)
        assert caught.value.errno in (expected, errno.ELOOP)
    with pytest.raises(OSError):
        write_inside(workspace, "folder-link/new.txt", b"x")
    assert sorted(p.name for p in outside.parent.iterdir()) == ["notes.txt"]


def test_a_fifo_is_refused_at_once_for_reading_and_writing(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    done: list[BaseException] = []

    def attempt() -> None:
        for call in (lambda: read_inside(workspace, "pipe", 10),
                     lambda: write_inside(workspace, "pipe", b"x")):
            try:
                call()
            except OSError as exc:
                done.append(exc)

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(10)  # a blocking open never returns: the bound is the failure
    assert not thread.is_alive(), "opening a FIFO blocked"
    assert len(done) == 2


def test_regular_files_read_write_and_list(workspace: Path) -> None:
    write_inside(workspace, "a/b/c.txt", b"hello")
    assert read_inside(workspace, "a/b/c.txt", 3) == b"hel"
    write_inside(workspace, "a/b/c.txt", b"hi")  # the whole file, shorter
    assert (workspace / "a/b/c.txt").read_bytes() == b"hi"
    (workspace / "a/link").symlink_to("b")
    os.mkfifo(workspace / "a/pipe")
    assert sorted(scan_inside(workspace, "a")) == [
        ("b", "folder", (workspace / "a/b").stat().st_size), ("link", "link", 1),
        ("pipe", "other", 0)]
    with pytest.raises(OSError):
        open_inside(workspace, "../x")


@contextmanager
def swapping(path: Path, outside: Path, regular: bool) -> Iterator[None]:
    """A thread that keeps swapping `path` between a link to `outside` and a regular
    file (or nothing), as sandboxed code can while Lily works."""
    spare = path.with_name(path.name + ".spare")

    def swap() -> None:
        try:
            spare.unlink(missing_ok=True)
            spare.symlink_to(outside)
            os.replace(spare, path)  # now a link
            if regular:
                spare.write_text("inside")
                os.replace(spare, path)  # now a file
            else:
                path.unlink(missing_ok=True)
        except OSError:
            pass

    with repeating(swap):
        yield


def test_read_raced_by_a_swap_never_reads_outside(workspace: Path, outside: Path) -> None:
    registry, policy, ctx = default_registry(), ToolPolicy(), ToolContext(workspace)
    read = []
    with swapping(workspace / "data.txt", outside, regular=True):
        for _ in range(400):
            read.append(run_tool(registry, policy, "read", {"path": "data.txt"}, ctx,
                                 "model").output)
    assert not [r for r in read if HOST_SECRET in r]
    assert "inside" in read  # the race was run: some reads found the file


def test_write_raced_by_a_swap_never_writes_outside(workspace: Path, outside: Path) -> None:
    registry, policy, ctx = default_registry(), ToolPolicy(allow="*"), ToolContext(workspace)
    wrote = []
    with swapping(workspace / "out.txt", outside, regular=False):
        for n in range(400):
            wrote.append(run_tool(registry, policy, "write",
                                  {"path": "out.txt", "content": f"written {n}"}, ctx,
                                  "model").output)
    assert outside.read_text() == HOST_SECRET
    assert any(w.startswith("wrote ") for w in wrote)  # the race was run
