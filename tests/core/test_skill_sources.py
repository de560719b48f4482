"""Where skills are found: the seven standard folders, extra roots, nested skills.

Each test builds the folders a person would have (workspace, Lily home, home folder),
then asks `lily skills --json` (a real subprocess) or builds the environment as the
kernel does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lily_kernel.environment import Workspace
from lily_kernel.skills import Host, LoadRules, SkillRoot, load_snapshot
from lily_kernel.skills.discovery import MAX_DEPTH
from tests.conftest import skill_text, write_skill
from tests.support.corpus import CORPUS as REAL

LILY = [sys.executable, "-m", "lily_kernel.cli.main"]


def lily_skills(workspace: Path, env: dict[str, str]) -> Any:
    done = subprocess.run([*LILY, "skills", "--workspace", str(workspace), "--json"],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={**env, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def seven_places(workspace: Path, environ: dict[str, str]) -> dict[str, Path]:
    """One folder of each standard place (and a nested one), by the skill put there."""
    home, lily_home = Path(environ["HOME"]), Path(environ["LILY_HOME"])
    return {
        "ws-lily": workspace / "skills",
        "ws-nested": workspace / "skills" / "group",
        "ws-agents": workspace / ".agents" / "skills",
        "ws-claude": workspace / ".claude" / "skills",
        "user-lily": lily_home / "skills",
        "user-agents": home / ".agents" / "skills",
        "user-claude": home / ".claude" / "skills",
    }


def test_every_standard_folder_is_found(workspace: Path, environ: dict[str, str]) -> None:
    places = seven_places(workspace, environ)
    for name, folder in places.items():
        write_skill(folder, name, skill_text(f"The {name} skill"))
    doc = lily_skills(workspace, environ)
    found = {s["name"]: s["path"] for s in doc["skills"]}
    assert found == {name: str(folder / name / "SKILL.md") for name, folder in places.items()}
    sources = {s["name"]: s["source"] for s in doc["skills"]}
    assert {n: sources[n] for n in ("ws-claude", "user-agents")} == {
        "ws-claude": "workspace", "user-agents": "user"}
    assert doc["diagnostics"] == []


def test_one_name_everywhere_the_precedence_table_decides(workspace: Path,
                                                          environ: dict[str, str]) -> None:
    places = seven_places(workspace, environ)
    del places["ws-nested"]
    extra = workspace.parent / "extra"
    environ = {**environ, "LILY_SKILLS_EXTRA_DIRS": f"{extra}{os.pathsep}"}
    for where, folder in [*places.items(), ("extra", extra),
                          ("bundled", Path(environ["LILY_SKILLS_BUNDLED_DIR"]))]:
        write_skill(folder, "same", skill_text(f"from {where}"))
    doc = lily_skills(workspace, environ)
    [skill] = doc["skills"]
    assert (skill["summary"], skill["source"]) == ("from ws-lily", "workspace")
    winner = str(places["ws-lily"] / "same" / "SKILL.md")
    shadowed = [(d["source"], d["path"]) for d in doc["diagnostics"]]
    assert shadowed == [
        ("workspace", str(places["ws-agents"] / "same" / "SKILL.md")),
        ("workspace", str(places["ws-claude"] / "same" / "SKILL.md")),
        ("user", str(places["user-lily"] / "same" / "SKILL.md")),
        ("user", str(places["user-agents"] / "same" / "SKILL.md")),
        ("user", str(places["user-claude"] / "same" / "SKILL.md")),
        ("extra", str(extra / "same" / "SKILL.md")),
        ("bundled", environ["LILY_SKILLS_BUNDLED_DIR"] + "/same/SKILL.md"),
    ]
    assert all(d["kind"] == "shadowed" and winner in d["reason"]
               for d in doc["diagnostics"])


def test_an_ineligible_winner_never_falls_back(workspace: Path,
                                               environ: dict[str, str]) -> None:
    write_skill(workspace / ".claude" / "skills", "tool",
                "---\nsummary: mac only\neligibility:\n  os: [darwin]\n---\n")
    write_skill(Path(environ["HOME"]) / ".agents" / "skills", "tool", skill_text("anywhere"))
    doc = lily_skills(workspace, environ)
    assert doc["skills"] == []
    kinds = sorted(d["kind"] for d in doc["diagnostics"])
    assert kinds == ["ineligible", "shadowed"]


def test_other_agents_folders_can_be_turned_off(workspace: Path,
                                                environ: dict[str, str]) -> None:
    for name, folder in seven_places(workspace, environ).items():
        write_skill(folder, name, skill_text(name))
    (workspace / "lily.yaml").write_text("skills_other_agents: false\n")
    doc = lily_skills(workspace, environ)
    names = sorted(s["name"] for s in doc["skills"])
    assert names == ["user-lily", "ws-lily", "ws-nested"]
    roots = [r for r in Workspace.load(workspace, environ).skill_roots]
    assert not any(".claude" in r.path or ".agents" in r.path for r in roots)


def test_extra_dirs_come_after_the_user_level_in_order(workspace: Path,
                                                       environ: dict[str, str]) -> None:
    (workspace / "lily.yaml").write_text("skills_extra_dirs: [first, ~/second]\n")
    env = Workspace.load(workspace, {**environ, "HOME": "/home/someone"})
    levels = [(r.source, r.path) for r in env.skill_roots if r.source == "extra"]
    assert levels == [("extra", str(workspace / "first")),
                      ("extra", str(Path("~/second").expanduser()))]
    order = [r.source for r in env.skill_roots]
    assert order == ["workspace"] * 3 + ["user"] * 3 + ["extra"] * 2 + ["bundled"]


def test_a_bad_extra_dirs_value_is_a_clear_error(workspace: Path,
                                                 environ: dict[str, str]) -> None:
    # One path as a string is read as LILY_SKILLS_EXTRA_DIRS reads it (issue 37, item 6);
    # a number or a mapping is no list of paths.
    from lily_kernel.errors import ConfigError

    for bad in ("5", "{a: 1}"):
        (workspace / "lily.yaml").write_text(f"skills_extra_dirs: {bad}\n")
        with pytest.raises(ConfigError, match=r"skills_extra_dirs.*a list of strings"):
            Workspace.load(workspace, environ)


# Nested skills -------------------------------------------------------------------


def load(root: Path) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    snap = load_snapshot((SkillRoot("workspace", str(root), True),), LoadRules(), Host())
    skills = {s.name: os.path.relpath(s.path, root) for s in snap.skills}
    diags = [(d.kind.value, d.skill, os.path.relpath(d.path, root)) for d in snap.diagnostics]
    return skills, diags


def test_nested_skills_are_found_and_named_by_their_folder(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root / "data" / "tables", "polars", skill_text("Polars"))
    write_skill(root, "flat", skill_text("Flat"))
    # A folder holding SKILL.md is a skill: nothing under it is searched.
    write_skill(root / "flat" / "examples", "inner", skill_text("Inner"))
    write_skill(root / ".hidden", "secret", skill_text("Hidden"))
    write_skill(root / "node_modules" / "pkg", "vendored", skill_text("Vendored"))
    (root / "empty-group" / "assets").mkdir(parents=True)
    skills, diags = load(root)
    assert skills == {"polars": "data/tables/polars/SKILL.md", "flat": "flat/SKILL.md"}
    assert diags == []


def test_nesting_is_bounded_in_depth(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    deepest = root.joinpath(*[f"g{i}" for i in range(MAX_DEPTH - 1)])
    write_skill(deepest, "deep-enough", skill_text("At the limit"))
    write_skill(deepest / "one-more", "too-deep", skill_text("Past the limit"))
    skills, _ = load(root)
    assert list(skills) == ["deep-enough"]


def test_two_skills_of_one_name_in_one_root_are_a_diagnostic(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root / "b-group", "pdf", skill_text("Second in path order"))
    write_skill(root / "a-group", "pdf", skill_text("First in path order"))
    write_skill(root / "a-group" / "deeper", "pdf-deep", skill_text("Deeper"))
    write_skill(root / "z" / "zz", "pdf-deep", skill_text("Deeper still"))
    write_skill(root / "a-group" / "x", "pdf-deep", skill_text("Shallower, later"))
    skills, diags = load(root)
    assert skills["pdf"] == "a-group/pdf/SKILL.md"
    assert skills["pdf-deep"] == "a-group/deeper/pdf-deep/SKILL.md"
    assert sorted(diags) == [("shadowed", "pdf", "b-group/pdf/SKILL.md"),
                             ("shadowed", "pdf-deep", "a-group/x/pdf-deep/SKILL.md"),
                             ("shadowed", "pdf-deep", "z/zz/pdf-deep/SKILL.md")]


def test_a_link_back_up_the_tree_ends(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root / "group", "real", skill_text("Real"))
    (root / "group" / "loop").symlink_to(root)
    skills, _ = load(root)
    assert skills == {"real": "group/real/SKILL.md"}


CORPUS = REAL.root


def test_the_corpus_in_its_repositories_layout_loads_as_the_flat_copy(tmp_path: Path) -> None:
    """Each of the nine repositories laid out as upstream (manifest.json's original
    paths) under one root loads the same SKILL.md files as the flat copy, but those
    under a hidden folder (`.curated/`, `.agents/`), which nesting skips by rule, and
    the copies whose folder name another repository's skill already has."""
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    flat_root, nested_root = tmp_path / "flat", tmp_path / "nested"
    flat_root.mkdir()
    hidden: set[str] = set()
    by_name: dict[str, list[str]] = {}
    for repo, items in manifest.items():
        for item in items:
            source = CORPUS / item["corpus_path"]
            flat = flat_root / item["corpus_path"].replace("/", "__")
            flat.symlink_to(source)
            original = nested_root / repo.replace("/", "__") / item["original_path"]
            original.parent.parent.mkdir(parents=True, exist_ok=True)
            original.parent.symlink_to(source)
            if any(part.startswith(".") for part in Path(item["original_path"]).parts):
                hidden.add(flat.name)
            else:
                by_name.setdefault(source.name, []).append(flat.name)
    rules = LoadRules()
    flat = load_snapshot((SkillRoot("workspace", str(flat_root), True),), rules, Host())
    nested = load_snapshot((SkillRoot("workspace", str(nested_root), True),), rules, Host())
    flat_digests = {s.name: s.digest for s in flat.skills}
    expected = {flat_digests[min(names)] for names in by_name.values()
                if min(names) in flat_digests}
    # Which copy of a shared name wins is path order in the nested root; compare digests
    # of the names whose copies are one only, and the counts for the rest.
    assert len(nested.skills) == len(expected)
    unique = {flat_digests[n[0]] for n in by_name.values() if len(n) == 1 and n[0] in flat_digests}
    assert unique <= {s.digest for s in nested.skills}
    duplicates = sum(len(n) - 1 for n in by_name.values())
    assert sum(d.kind.value == "shadowed" for d in nested.diagnostics) == duplicates
    excluded = sum(1 for d in flat.diagnostics if d.excludes)
    assert len(hidden) + len(by_name) + duplicates == len(flat.skills) + excluded


# --- the project: skills folders above the workspace, up to its repository's root ------


def repository(top: Path, notebook: str = "analysis/nb") -> Path:
    """A repository (`.git`) with a skill in its `.claude/skills` and `.agents/skills`,
    and a notebook folder below it; returns the notebook folder (the workspace)."""
    (top / ".git").mkdir(parents=True)
    write_skill(top / ".claude" / "skills", "x", skill_text("The project's skill"))
    write_skill(top / ".agents" / "skills", "shared", skill_text("An Agent Skills one"))
    workspace = top / notebook
    workspace.mkdir(parents=True, exist_ok=True)
    return workspace


def test_a_notebook_in_a_sub_folder_sees_the_repositorys_skills(
        tmp_path: Path, environ: dict[str, str]) -> None:
    """`ws/analysis/nb` saw nothing of `ws/.claude/skills`."""
    sub = repository(tmp_path / "repo")
    write_skill(tmp_path / "repo" / "analysis" / ".claude" / "skills", "near",
                skill_text("One level up"))
    write_skill(tmp_path / "repo" / "skills", "authored", skill_text("Lily's own name"))
    write_skill(tmp_path / ".claude" / "skills", "above", skill_text("Past the root"))
    doc = lily_skills(sub, environ)
    found = {s["name"]: (s["source"], s["path"]) for s in doc["skills"]}
    top = tmp_path / "repo"
    assert found == {
        "near": ("project", str(top / "analysis/.claude/skills/near/SKILL.md")),
        "shared": ("project", str(top / ".agents/skills/shared/SKILL.md")),
        "x": ("project", str(top / ".claude/skills/x/SKILL.md")),
    }  # not the repository's skills/ (where skills are written), nothing past its root
    roots = [(r.source, r.path) for r in Workspace.load(sub, environ).skill_roots]
    assert roots[:7] == [
        ("workspace", str(sub / "skills")), ("workspace", str(sub / ".agents/skills")),
        ("workspace", str(sub / ".claude/skills")),
        ("project", str(top / "analysis/.agents/skills")),
        ("project", str(top / "analysis/.claude/skills")),
        ("project", str(top / ".agents/skills")), ("project", str(top / ".claude/skills")),
    ]  # nearer folders first, after the workspace's own and before the user's
    assert roots[7][0] == "user"


def test_the_project_level_sits_between_the_workspace_and_the_user(
        tmp_path: Path, environ: dict[str, str]) -> None:
    sub = repository(tmp_path / "repo")
    write_skill(sub / ".claude" / "skills", "x", skill_text("The notebook's own"))
    write_skill(Path(environ["HOME"]) / ".claude" / "skills", "shared", skill_text("Mine"))
    doc = lily_skills(sub, environ)
    found = {s["name"]: (s["source"], s["summary"]) for s in doc["skills"]}
    assert found == {"x": ("workspace", "The notebook's own"),
                     "shared": ("project", "An Agent Skills one")}
    shadowed = {(d["skill"], d["source"]) for d in doc["diagnostics"]}
    assert shadowed == {("x", "project"), ("shared", "user")}


@pytest.mark.parametrize(("notebook", "source"), [
    ("", "workspace"),  # the repository's root is the workspace: no project level
    ("a/b/c/d/e", "project"),  # five folders up
    ("a/b/c/d/e/f", None),  # six: past the bound
])
def test_the_repository_root_is_looked_for_a_few_folders_up(
        tmp_path: Path, environ: dict[str, str], notebook: str, source: str | None) -> None:
    sub = repository(tmp_path / "repo", notebook)
    doc = lily_skills(sub, environ)
    assert {s["name"]: s["source"] for s in doc["skills"]}.get("x") == source


def test_no_repository_no_project_level_and_never_past_home(
        tmp_path: Path, environ: dict[str, str]) -> None:
    """Without `.git` above, nothing is looked for; a home folder under git (dotfiles)
    is the person's: its skills folders are the user level, never the project's, and
    nothing between it and the notebook counts."""
    plain = tmp_path / "plain" / "analysis"
    plain.mkdir(parents=True)
    write_skill(tmp_path / "plain" / ".claude" / "skills", "x", skill_text("No repository"))
    assert lily_skills(plain, environ)["skills"] == []
    home = tmp_path / "alice"
    (home / ".git").mkdir(parents=True)
    write_skill(home / ".claude" / "skills", "mine", skill_text("Mine"))
    write_skill(home / "projects" / ".claude" / "skills", "between", skill_text("Between"))
    notebook = home / "projects" / "nb"
    notebook.mkdir(parents=True)
    doc = lily_skills(notebook, {**environ, "HOME": str(home)})
    assert [(s["name"], s["source"]) for s in doc["skills"]] == [("mine", "user")]
    roots = Workspace.load(notebook, {**environ, "HOME": str(home)}).skill_roots
    assert not any(r.source == "project" for r in roots)


def test_the_project_level_is_turned_off_with_the_other_agents_folders(
        tmp_path: Path, environ: dict[str, str]) -> None:
    sub = repository(tmp_path / "repo")
    (sub / "lily.yaml").write_text("skills_other_agents: false\n")
    assert lily_skills(sub, environ)["skills"] == []
    assert not any(r.source == "project"
                   for r in Workspace.load(sub, environ).skill_roots)
