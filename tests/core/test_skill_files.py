"""read_skill_file: the active skill's folder only, read-only, size-capped, with a digest."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from lily_kernel.errors import ToolError
from lily_kernel.tools import (
    ActiveSkill,
    ToolContext,
    ToolPolicy,
    default_registry,
)
from lily_kernel.tools.files import MAX_READ_CHARS
from lily_kernel.tools.skill_files import read_skill_file, resolve_in_skill
from tests.conftest import FIXTURES
from tests.support.gate import run_tool

FORMFILL = FIXTURES / "skill_files" / "formfill"


@pytest.fixture
def skill(tmp_path: Path) -> ActiveSkill:
    folder = tmp_path / "user-root" / "formfill"
    shutil.copytree(FORMFILL, folder)
    return ActiveSkill("formfill", folder)


def test_reads_a_reference_with_its_sha256(skill: ActiveSkill) -> None:
    found = read_skill_file(skill, "references/forms.md")
    raw = (skill.folder / "references" / "forms.md").read_bytes()
    assert found.text == raw.decode()
    assert (found.path, found.sha256, found.size) == (
        "references/forms.md", hashlib.sha256(raw).hexdigest(), len(raw))


@pytest.mark.parametrize("spelling", ["{baseDir}/references/forms.md", "./references/forms.md",
                                      "references\\forms.md"])
def test_other_agents_spellings_of_the_same_path(skill: ActiveSkill, spelling: str) -> None:
    assert read_skill_file(skill, spelling).path == "references/forms.md"


def test_the_folders_own_absolute_path_is_accepted(skill: ActiveSkill) -> None:
    absolute = str(skill.folder / "references" / "forms.md")
    assert read_skill_file(skill, absolute).path == "references/forms.md"


@pytest.mark.parametrize("path, reason", [
    ("../other/SKILL.md", "uses '..'"),
    ("/etc/passwd", "outside the skill 'formfill'"),
    (".env", "hidden"),
    ("references/missing.md", "no file 'references/missing.md' in the skill 'formfill'"),
])
def test_refusals(skill: ActiveSkill, path: str, reason: str) -> None:
    with pytest.raises(ToolError, match=reason.replace("(", r"\(")):
        read_skill_file(skill, path)


def test_a_link_out_of_the_folder_is_refused(skill: ActiveSkill, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("secret")
    os.symlink(tmp_path / "outside.txt", skill.folder / "references" / "leak.md")
    with pytest.raises(ToolError, match="leads outside the skill"):
        read_skill_file(skill, "references/leak.md")


def test_a_skill_folder_that_is_itself_a_link_still_works(skill: ActiveSkill,
                                                          tmp_path: Path) -> None:
    link = tmp_path / "linked-root" / "formfill"
    link.parent.mkdir()
    os.symlink(skill.folder, link)
    target, relative = resolve_in_skill(ActiveSkill("formfill", link), "references/forms.md")
    assert relative == "references/forms.md" and target.is_file()


def test_a_large_file_is_truncated_but_hashed_whole(skill: ActiveSkill) -> None:
    big = skill.folder / "references" / "big.md"
    data = ("x" * (MAX_READ_CHARS * 5)).encode()
    big.write_bytes(data)
    found = read_skill_file(skill, "references/big.md")
    assert found.text.endswith(f"[... truncated at {MAX_READ_CHARS:,} characters]")
    assert len(found.text) < MAX_READ_CHARS + 100
    assert (found.sha256, found.size) == (hashlib.sha256(data).hexdigest(), len(data))


def test_binary_files_are_refused(skill: ActiveSkill) -> None:
    (skill.folder / "references" / "blob.bin").write_bytes(b"\xff\xfe\x00\x01" * 10)
    with pytest.raises(ToolError, match="not a UTF-8 text file"):
        read_skill_file(skill, "references/blob.bin")


def test_the_tool_needs_an_active_skill(skill: ActiveSkill, tmp_path: Path) -> None:
    registry, policy = default_registry(), ToolPolicy()
    none = run_tool(registry, policy, "read_skill_file", {"path": "references/forms.md"},
                    ToolContext(tmp_path), "model")
    assert none.output == "Error: no skill is active; load one with load_skill first."
    ok = run_tool(registry, policy, "read_skill_file", {"path": "references/forms.md"},
                  ToolContext(tmp_path, skill=skill), "model")
    assert ok.output.startswith("# Forms")


def test_skill_tools_are_offered_only_while_a_skill_is_active() -> None:
    registry, policy = default_registry(), ToolPolicy(allow="*")
    assert "read_skill_file" not in [t.name for t in policy.model_tools(registry)]
    active = [t.name for t in policy.model_tools(registry, skill_active=True)]
    assert "read_skill_file" in active
    narrowed = [t.name for t in policy.model_tools(registry, frozenset({"grep"}), skill_active=True)]
    assert narrowed == ["read_skill_file"]  # reading its own files survives narrowing


def test_a_path_too_long_is_a_short_clear_refusal(skill: ActiveSkill) -> None:
    """A 5,000-character path used to end the cell with OSError: File name too long."""
    long = "references/" + "a" * 5000 + ".md"
    with pytest.raises(ToolError, match=r"is too long for a path \(5,014 characters\)") as exc:
        read_skill_file(skill, long)
    assert len(str(exc.value)) < 300
    with pytest.raises(ToolError, match="too long"):
        resolve_in_skill(skill, "scripts/" + "b" * 300 + ".py")


def test_a_latin1_file_is_not_utf8_even_at_its_end(skill: ActiveSkill) -> None:
    (skill.folder / "references" / "menu.md").write_bytes(b"caf\xe9")
    with pytest.raises(ToolError, match="is not a UTF-8 text file"):
        read_skill_file(skill, "references/menu.md")


def test_a_huge_file_is_refused_before_it_is_hashed(skill: ActiveSkill) -> None:
    """A sparse 20 GB file would keep a core hashing long after an interrupt."""
    with open(skill.folder / "references" / "huge.bin", "wb") as handle:
        handle.truncate(20 * 2**30)
    with pytest.raises(ToolError, match=r"is 21,474,836,480 bytes, over the 64 MiB"):
        read_skill_file(skill, "references/huge.bin")
