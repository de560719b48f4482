"""Folder digests (what trust records) and the cache that keeps files' digests by stat."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lily_kernel.skills import digest as digests
from lily_kernel.skills.digest import DigestCache, folder_digest


def skill_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "skill"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nsummary: s\n---\nbody\n")
    (folder / "scripts" / "run.py").write_text("print('trusted')\n")
    return folder


def test_a_second_digest_reads_no_file_and_says_the_same(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digests, "RACY_SECONDS", 0.0)
    folder = skill_folder(tmp_path)
    store = tmp_path / "cache" / "digests.sqlite"
    first = DigestCache(store)
    value = folder_digest(str(folder), first)
    first.save()
    assert first.read == 2
    again = DigestCache(store)  # another process: the kept digests
    assert folder_digest(str(folder), again) == value and again.read == 0
    assert folder_digest(str(folder)) == value  # no cache at all: the same digest


def test_a_change_that_keeps_size_and_times_is_still_seen(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The attacker's way round a stat cache: the same size, the old modification time
    put back. The change time moves with any write, and nobody can set it back."""
    monkeypatch.setattr(digests, "RACY_SECONDS", 0.0)
    folder = skill_folder(tmp_path)
    cache = DigestCache(tmp_path / "digests.sqlite")
    trusted = folder_digest(str(folder), cache)
    cache.save()
    script = folder / "scripts" / "run.py"
    before = script.stat()
    script.write_text("print('planted')\n")  # same length
    os.utime(script, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert script.stat().st_size == before.st_size
    assert folder_digest(str(folder), DigestCache(tmp_path / "digests.sqlite")) != trusted


def test_a_file_changed_a_moment_ago_is_not_kept(tmp_path: Path) -> None:
    """Written within RACY_SECONDS, a file's times may not show a second change in the
    same tick: it is read again next time."""
    folder = skill_folder(tmp_path)
    cache = DigestCache(tmp_path / "digests.sqlite")
    folder_digest(str(folder), cache)
    cache.save()
    again = DigestCache(tmp_path / "digests.sqlite")
    folder_digest(str(folder), again)
    assert again.read == 2


def test_the_loaders_bytes_stand_for_the_skill_md(tmp_path: Path) -> None:
    folder = skill_folder(tmp_path)
    plain = folder_digest(str(folder))
    import hashlib

    read = hashlib.sha256((folder / "SKILL.md").read_bytes()).hexdigest()
    assert folder_digest(str(folder), read={"SKILL.md": read}) == plain
    assert folder_digest(str(folder), read={"SKILL.md": "0" * 64}) != plain


def test_the_digest_format_is_the_one_trust_stores_hold(tmp_path: Path) -> None:
    """Trust stores keep digests: a folder's own files first (by name), then its
    folders' (by name), each line `path NUL sha256`, links by their target."""
    import hashlib

    (tmp_path / "b" / "c").mkdir(parents=True)
    (tmp_path / "z.txt").write_text("1")
    (tmp_path / "A.md").write_text("4")
    (tmp_path / "b" / "y").write_text("2")
    (tmp_path / "b" / "c" / "x").write_text("3")
    (tmp_path / "link").symlink_to("b")

    def sha(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    lines = [f"A.md\0{sha('4')}\n", "link\0link\0b\n", f"z.txt\0{sha('1')}\n",
             f"b/y\0{sha('2')}\n", f"b/c/x\0{sha('3')}\n"]
    assert folder_digest(str(tmp_path)) == sha("".join(lines))


def test_past_the_file_limit_a_same_size_change_is_still_seen(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files past MAX_FILES are not read; 5,000 empty files before scripts/ must not let
    a trusted script be swapped for another of the same length."""
    monkeypatch.setattr(digests, "MAX_FILES", 3)
    folder = skill_folder(tmp_path)
    for name in ("a", "b", "c"):
        (folder / name).write_text("")
    trusted = folder_digest(str(folder))
    script = folder / "scripts" / "run.py"
    before = script.stat()
    script.write_text("print('planted')\n")  # same length, the old time put back
    os.utime(script, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert script.stat().st_size == before.st_size
    assert folder_digest(str(folder)) != trusted
