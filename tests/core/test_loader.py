"""The skill loader: every rule of SPEC §2.1 and §2.3, one fixture folder per rule."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lily_kernel.errors import SkillRootError
from lily_kernel.skills import (
    DiagnosticKind,
    Host,
    LoadRules,
    SkillRoot,
    SkillSnapshot,
    load_snapshot,
)
from lily_kernel.skills.spec import NO_DESCRIPTION, NO_FRONTMATTER, NO_NAME
from tests.conftest import FIXTURES, skill_text, write_skill

RULES_ROOT = FIXTURES / "rules"
TOOLS = frozenset({"read", "write", "list"})
RULES = LoadRules(registered_tools=TOOLS, allowed_tools=TOOLS,
                  reserved_commands=frozenset({"skills", "skill", "help", "agent",
                                               "reload_skills"}))
LINUX = Host(platform="linux", environ={}, which=lambda name: None)


def root(path: Path, source: str = "workspace") -> SkillRoot:
    return SkillRoot(source=source, path=str(path), exists=path.exists())  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def rules_snapshot() -> SkillSnapshot:
    return load_snapshot((root(RULES_ROOT),), RULES, LINUX)


def diagnostic(snap: SkillSnapshot, name: str, kind: DiagnosticKind) -> str:
    found = [d for d in snap.diagnostics if d.skill == name and d.kind is kind]
    assert found, f"no {kind.value} diagnostic for {name}: {snap.diagnostics}"
    return found[0].reason


@pytest.mark.parametrize(
    ("name", "kind", "reason_part"),
    [
        ("invalid_yaml", DiagnosticKind.MALFORMED, "invalid YAML frontmatter at line"),
        ("not_mapping", DiagnosticKind.MALFORMED, "not a mapping"),
        ("wrong_type", DiagnosticKind.MALFORMED, "key 'summary' has the wrong type"),
        ("wrong_type_requires_tools", DiagnosticKind.MALFORMED, "key 'requires_tools'"),
        ("unknown_mode", DiagnosticKind.MALFORMED, "unknown invocation_mode 'telepathy'"),
        ("dispatch_without_tool", DiagnosticKind.MALFORMED, "requires command_tool"),
        ("unregistered_tool", DiagnosticKind.MALFORMED, "'teleport' is not a registered tool"),
        ("bad_command", DiagnosticKind.MALFORMED, "must match ^[a-z0-9_-]+$"),
        ("builtin_alias", DiagnosticKind.MALFORMED, "collides with the built-in /help"),
        ("policy_denied", DiagnosticKind.POLICY, "not allowed by the tool policy: shell"),
        ("ineligible_os", DiagnosticKind.INELIGIBLE, "requires os win32; this machine is linux"),
        ("ineligible_env", DiagnosticKind.INELIGIBLE, "LILY_TEST_SURELY_UNSET_VARIABLE"),
        ("ineligible_binary", DiagnosticKind.INELIGIBLE, "lily-test-no-such-binary not found"),
        ("bad_os_value", DiagnosticKind.MALFORMED, "unknown os 'macos'"),
        ("openclaw_metadata", DiagnosticKind.INELIGIBLE, "lily-test-no-such-binary"),
        ("requires_mcp", DiagnosticKind.INELIGIBLE,
         "requires MCP server(s) not configured: rube (`mcp_servers` in lily.yaml"),
        ("python_tag", DiagnosticKind.MALFORMED, "invalid YAML frontmatter"),
        ("unclosed_frontmatter", DiagnosticKind.MALFORMED, "never closed"),
    ],
)
def test_each_exclusion_rule_has_its_diagnostic(
    rules_snapshot: SkillSnapshot, name: str, kind: DiagnosticKind, reason_part: str
) -> None:
    assert rules_snapshot.get(name) is None
    assert reason_part in diagnostic(rules_snapshot, name, kind)
    diag = next(d for d in rules_snapshot.diagnostics if d.skill == name)
    assert diag.source == "workspace"
    assert diag.path == str(RULES_ROOT / name / "SKILL.md")


def test_python_tags_never_execute(rules_snapshot: SkillSnapshot) -> None:
    assert not Path("/tmp/lily-pwned").exists()


def test_valid_skills_load_with_defaults(rules_snapshot: SkillSnapshot) -> None:
    minimal = rules_snapshot.get("ok_minimal")
    assert minimal is not None
    assert (minimal.summary, minimal.invocation_mode, minimal.command) == (
        "A minimal valid skill.", "prompt_rewrite", None)
    assert minimal.body == "Body of the minimal skill.\n"
    bare = rules_snapshot.get("no_frontmatter")
    assert bare is not None and bare.summary == "" and bare.body.startswith("# No frontmatter")


def test_unknown_keys_are_ignored_but_kept(rules_snapshot: SkillSnapshot) -> None:
    skill = rules_snapshot.get("unknown_keys")
    assert skill is not None
    assert skill.extra == {"homepage": "https://example.invalid/skill",
                           "related": {"skills": ["pdf"]}, "x-other-agent": True}


def test_name_differing_from_folder_warns_and_folder_name_wins(
    rules_snapshot: SkillSnapshot,
) -> None:
    skill = rules_snapshot.get("name_mismatch")
    assert skill is not None and skill.front.name == "Some Other Name"
    reasons = [d.reason for d in rules_snapshot.diagnostics
               if d.skill == "name_mismatch" and d.kind is DiagnosticKind.WARNING]
    assert any("differs from the directory name 'name_mismatch'" in r for r in reasons)


def test_the_specifications_rules_warn_and_the_skill_still_loads() -> None:
    """Each fixture of tests/fixtures/spec loads. A rule broken by a value the skill sets
    is a warning with the very message `lily validate` prints as an error (its
    `expected.txt`); what Lily's format leaves out on purpose (frontmatter, name,
    description) is no warning."""
    spec = FIXTURES / "spec"
    snap = load_snapshot((root(spec),), RULES, LINUX)
    cases = sorted(p.name for p in spec.iterdir())
    assert [s.name for s in snap.skills] == cases
    left_out = {NO_FRONTMATTER, NO_NAME, NO_DESCRIPTION}
    for case in cases:
        errors = [line.split(": ", 1)[1]
                  for line in (spec / case / "expected.txt").read_text().splitlines()
                  if line.startswith("error")]
        warnings = [d.reason for d in snap.diagnostics if d.skill == case]
        assert all(d.kind is DiagnosticKind.WARNING for d in snap.diagnostics)
        assert warnings == [e for e in errors if e not in left_out], case
    assert len(snap.diagnostics) == 13  # the value rules, one warning each


def test_two_skills_claiming_one_alias_lose_it_both(rules_snapshot: SkillSnapshot) -> None:
    one, two = rules_snapshot.get("alias_one"), rules_snapshot.get("alias_two")
    assert one is not None and two is not None
    assert (one.command, two.command) == (None, None)
    assert rules_snapshot.by_command("dup") is None
    assert "also claimed by alias_two" in diagnostic(rules_snapshot, "alias_one",
                                                     DiagnosticKind.WARNING)
    assert "also claimed by alias_one" in diagnostic(rules_snapshot, "alias_two",
                                                     DiagnosticKind.WARNING)


def test_standard_fields_are_parsed(rules_snapshot: SkillSnapshot) -> None:
    skill = rules_snapshot.get("standard_fields")
    assert skill is not None
    assert skill.front.license == "Apache-2.0"
    assert skill.front.compatibility == "Needs a POSIX shell."
    assert skill.allowed_tools == ("Read", "Bash(git status:*)")
    assert skill.front.metadata == {"author": "someone", "version": "1.0"}
    assert skill.summary == "Uses every Agent Skills standard field."  # from description


def test_hidden_and_non_skill_folders_are_not_candidates(rules_snapshot: SkillSnapshot) -> None:
    names = {s.name for s in rules_snapshot.skills} | {d.skill for d in rules_snapshot.diagnostics}
    assert ".hidden_skill" not in names
    assert "not_a_skill" not in names


def test_order_is_code_point_order(tmp_path: Path) -> None:
    for name in ["b", "B", "a", "_x", "Z", "é"]:
        write_skill(tmp_path, name, skill_text(name))
    snap = load_snapshot((root(tmp_path),), RULES, LINUX)
    assert [s.name for s in snap.skills] == ["B", "Z", "_x", "a", "b", "é"]


def test_crlf_and_bom_are_accepted(tmp_path: Path) -> None:
    folder = tmp_path / "crlf_bom"
    folder.mkdir()
    text = "---\r\nsummary: Windows file\r\ncommand: win\r\n---\r\n\r\nBody line\r\n"
    (folder / "SKILL.md").write_bytes(b"\xef\xbb\xbf" + text.encode())
    snap = load_snapshot((root(tmp_path),), RULES, LINUX)
    skill = snap.get("crlf_bom")
    assert skill is not None
    assert (skill.summary, skill.command, skill.body) == ("Windows file", "win", "\nBody line\n")


def test_over_size_and_not_utf8_are_excluded(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.mkdir()
    (big / "SKILL.md").write_text("---\nsummary: big\n---\n" + "x" * (300 * 1024))
    latin = tmp_path / "latin"
    latin.mkdir()
    (latin / "SKILL.md").write_bytes("---\nsummary: café\n---\n".encode("latin-1"))
    snap = load_snapshot((root(tmp_path),), RULES, LINUX)
    assert "over the 256 KiB limit" in diagnostic(snap, "big", DiagnosticKind.MALFORMED)
    assert "not valid UTF-8" in diagnostic(snap, "latin", DiagnosticKind.MALFORMED)


def test_size_limit_boundary(tmp_path: Path) -> None:
    head = b"---\nsummary: s\n---\n"
    for name, size in (("at_limit", 256 * 1024), ("over_limit", 256 * 1024 + 1)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "SKILL.md").write_bytes(head + b"x" * (size - len(head)))
    snap = load_snapshot((root(tmp_path),), RULES, LINUX)
    at_limit = snap.get("at_limit")
    assert at_limit is not None and len(at_limit.body) == 256 * 1024 - len(head)
    assert "262,145 bytes, over the 256 KiB limit" in diagnostic(snap, "over_limit",
                                                                 DiagnosticKind.MALFORMED)


def test_unreadable_skill_file_is_excluded(tmp_path: Path) -> None:
    dangling = tmp_path / "dangling"
    dangling.mkdir()
    os.symlink(tmp_path / "nowhere.md", dangling / "SKILL.md")
    as_dir = tmp_path / "as_dir"
    (as_dir / "SKILL.md").mkdir(parents=True)
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "SKILL.md")
    snap = load_snapshot((root(tmp_path),), RULES, LINUX)
    for name in ("dangling", "as_dir", "fifo"):
        assert "cannot read SKILL.md" in diagnostic(snap, name, DiagnosticKind.MALFORMED)


def test_precedence_workspace_over_user_over_bundled(tmp_path: Path) -> None:
    ws, user, bundled = tmp_path / "ws", tmp_path / "user", tmp_path / "bundled"
    write_skill(ws, "shared", skill_text("workspace copy"))
    write_skill(user, "shared", skill_text("user copy"))
    write_skill(bundled, "shared", skill_text("bundled copy"))
    write_skill(user, "user_only", skill_text("user only"))
    write_skill(bundled, "user_only", skill_text("bundled copy of user_only"))
    roots = (root(ws, "workspace"), root(user, "user"), root(bundled, "bundled"))
    snap = load_snapshot(roots, RULES, LINUX)
    shared, user_only = snap.get("shared"), snap.get("user_only")
    assert shared is not None and (shared.source, shared.summary) == ("workspace", "workspace copy")
    assert user_only is not None and user_only.source == "user"
    shadowed = [(d.skill, d.source) for d in snap.diagnostics if d.kind is DiagnosticKind.SHADOWED]
    assert shadowed == [("shared", "user"), ("shared", "bundled"), ("user_only", "bundled")]
    reason = next(d.reason for d in snap.diagnostics if d.kind is DiagnosticKind.SHADOWED)
    assert reason == f"shadowed by the workspace skill at {ws / 'shared' / 'SKILL.md'}"


def test_ineligible_winner_is_excluded_without_fallback(tmp_path: Path) -> None:
    ws, bundled = tmp_path / "ws", tmp_path / "bundled"
    write_skill(ws, "tool", "---\nsummary: mac only\neligibility:\n  os: [darwin]\n---\n")
    write_skill(bundled, "tool", skill_text("eligible everywhere"))
    snap = load_snapshot((root(ws), root(bundled, "bundled")), RULES, LINUX)
    assert snap.get("tool") is None
    assert "requires os darwin" in diagnostic(snap, "tool", DiagnosticKind.INELIGIBLE)
    assert "shadowed by the workspace skill" in diagnostic(snap, "tool", DiagnosticKind.SHADOWED)


def test_malformed_winner_is_excluded_without_fallback(tmp_path: Path) -> None:
    ws, bundled = tmp_path / "ws", tmp_path / "bundled"
    write_skill(ws, "tool", "---\nsummary: [broken\n---\n")
    write_skill(bundled, "tool", skill_text("fine"))
    snap = load_snapshot((root(ws), root(bundled, "bundled")), RULES, LINUX)
    assert snap.get("tool") is None
    assert diagnostic(snap, "tool", DiagnosticKind.MALFORMED)


def test_eligibility_uses_the_host(tmp_path: Path) -> None:
    write_skill(tmp_path, "needs", "---\nsummary: s\neligibility:\n  env: [TOKEN]\n"
                                   "  binaries: [git]\n  os: [linux]\n---\n")
    ok_host = Host(platform="linux", environ={"TOKEN": "x"}, which=lambda n: f"/usr/bin/{n}")
    assert load_snapshot((root(tmp_path),), RULES, ok_host).get("needs") is not None
    empty_env = Host(platform="linux", environ={"TOKEN": ""}, which=lambda n: "/x")
    assert load_snapshot((root(tmp_path),), RULES, empty_env).get("needs") is None


def test_openclaw_any_bins(tmp_path: Path) -> None:
    write_skill(tmp_path, "claw", '---\nmetadata: {"openclaw": {"requires": '
                                  '{"anyBins": ["a", "b"]}}}\n---\n')
    only_b = Host(platform="linux", environ={}, which=lambda n: "/x" if n == "b" else None)
    assert load_snapshot((root(tmp_path),), RULES, only_b).get("claw") is not None
    snap = load_snapshot((root(tmp_path),), RULES, LINUX)
    assert "one of these binaries on PATH: a, b" in diagnostic(snap, "claw",
                                                               DiagnosticKind.INELIGIBLE)


def test_missing_root_is_empty_and_unreadable_root_is_a_hard_error(tmp_path: Path) -> None:
    missing = load_snapshot((root(tmp_path / "nope"),), RULES, LINUX)
    assert missing.skills == () and missing.diagnostics == ()
    a_file = tmp_path / "file"
    a_file.write_text("not a folder")
    with pytest.raises(SkillRootError, match=r"Cannot read the user skills root .*file"):
        load_snapshot((SkillRoot("user", str(a_file), True),), RULES, LINUX)


def test_a_root_that_is_a_link_loop_is_a_hard_error_a_dangling_link_is_empty(
        tmp_path: Path) -> None:
    os.symlink("loop", tmp_path / "loop")
    with pytest.raises(SkillRootError,
                       match=r"Cannot read the workspace skills root .*loop: Too many levels"):
        load_snapshot((root(tmp_path / "loop"),), RULES, LINUX)
    os.symlink("nowhere", tmp_path / "dangling")
    assert load_snapshot((root(tmp_path / "dangling"),), RULES, LINUX).skills == ()


def test_a_root_listed_twice_is_read_once(tmp_path: Path) -> None:
    write_skill(tmp_path, "one", skill_text("one"))
    snap = load_snapshot((root(tmp_path), root(tmp_path, "bundled")), RULES, LINUX)
    assert [s.source for s in snap.skills] == ["workspace"]
    assert snap.diagnostics == ()


def test_a_configured_mcp_server_makes_requires_mcp_eligible() -> None:
    rules = LoadRules(registered_tools=TOOLS, allowed_tools=TOOLS,
                      mcp_servers=frozenset({"rube"}))
    skill = load_snapshot((root(RULES_ROOT),), rules, LINUX).get("requires_mcp")
    assert skill is not None and skill.front.requires is not None
    assert skill.front.requires.mcp == ("rube",) and "requires" not in skill.extra
    # Whatever the case of the server's name, as the tool policy compares it.
    rules = LoadRules(registered_tools=TOOLS, allowed_tools=TOOLS,
                      mcp_servers=frozenset({"Rube"}))
    assert load_snapshot((root(RULES_ROOT),), rules, LINUX).get("requires_mcp") is not None


def test_one_bad_skill_never_stops_the_others(rules_snapshot: SkillSnapshot) -> None:
    available = {s.name for s in rules_snapshot.skills}
    assert available == {"ok_minimal", "no_frontmatter", "unknown_keys", "name_mismatch",
                         "alias_one", "alias_two", "hidden_from_model", "standard_fields"}


def test_a_folder_name_that_is_not_utf8_is_excluded_not_fatal(tmp_path: Path) -> None:
    bad = os.path.join(os.fsencode(tmp_path), b"bad\xff")
    os.mkdir(bad)
    with open(os.path.join(bad, b"SKILL.md"), "wb") as handle:
        handle.write(b"---\nsummary: s\n---\n")
    write_skill(tmp_path, "good", skill_text("good"))
    snap = load_snapshot((root(tmp_path),), RULES, LINUX)
    assert [s.name for s in snap.skills] == ["good"]
    assert "not valid UTF-8" in diagnostic(snap, "bad\ufffd", DiagnosticKind.MALFORMED)


def test_a_root_created_or_removed_mid_session_counts_at_the_next_load(tmp_path: Path) -> None:
    later = tmp_path / "later"
    declared = root(later)  # resolved while the folder did not exist yet
    assert not declared.exists
    write_skill(later, "hello", skill_text("hello"))
    snap = load_snapshot((declared,), RULES, LINUX)
    assert snap.get("hello") is not None and snap.roots[0].exists
    import shutil

    shutil.rmtree(later)
    gone = load_snapshot(snap.roots, RULES, LINUX)  # the root existed at the last load
    assert gone.skills == () and not gone.roots[0].exists


def test_alias_with_a_trailing_newline_is_malformed(tmp_path: Path) -> None:
    write_skill(tmp_path, "sneaky", '---\nsummary: s\ncommand: "skills\\n"\n---\n')
    snap = load_snapshot((root(tmp_path),), RULES, LINUX)
    assert snap.get("sneaky") is None
    assert "must match" in diagnostic(snap, "sneaky", DiagnosticKind.MALFORMED)


def test_over_size_reports_the_size_on_disk(tmp_path: Path) -> None:
    (tmp_path / "huge").mkdir()
    (tmp_path / "huge" / "SKILL.md").write_bytes(b"x" * 1_000_000)
    snap = load_snapshot((root(tmp_path),), RULES, LINUX)
    assert diagnostic(snap, "huge", DiagnosticKind.MALFORMED) == (
        "SKILL.md is 1,000,000 bytes, over the 256 KiB limit")


def test_the_bundled_roots_are_the_checkouts_skills_and_persona() -> None:
    """Found beside the package (flat layout) when not inside a wheel: a wrong parent
    silently gave every session zero bundled skills and no default persona files."""
    from lily_kernel.skills import bundled_dir

    assert (bundled_dir("skills") / "workspace-files" / "SKILL.md").is_file()
    assert (bundled_dir("persona") / "default" / "SOUL.md").is_file()


def test_a_binary_installed_after_a_load_counts_at_the_next_load(tmp_path: Path) -> None:
    """The session keeps one Host; its PATH cache must not outlive a load (bug: after
    installing a binary, /reload_skills still said it was missing)."""
    installed: set[str] = set()
    host = Host(platform="linux", environ={}, which=lambda n: n if n in installed else None)
    write_skill(tmp_path, "needs_tool", "---\nsummary: s\neligibility:\n  binaries: [mytool]\n---\n")
    roots = (root(tmp_path),)
    assert load_snapshot(roots, RULES, host).get("needs_tool") is None
    installed.add("mytool")
    assert load_snapshot(roots, RULES, host, version=2).get("needs_tool") is not None
