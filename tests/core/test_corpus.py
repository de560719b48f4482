"""The real corpus (../shared/corpus, 1,102 SKILL.md files, or the 46 of them in
tests/fixtures/corpus on a clone without it): nothing crashes, nearly all load."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from lily_kernel.skills import (
    DiagnosticKind,
    Host,
    LoadRules,
    SkillRoot,
    check_skill_directory,
    load_snapshot,
)
from lily_kernel.skills.invocation import dynamic_context
from tests.support.corpus import CORPUS as REAL

CORPUS = REAL.root


class EveryVariable(Mapping[str, str]):
    """An environment in which every variable is set."""

    def __getitem__(self, key: str) -> str:
        return "set"

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

def test_every_corpus_skill_loads_or_is_excluded_with_a_reason() -> None:
    repos = sorted(p for p in CORPUS.iterdir() if p.is_dir())
    roots = tuple(SkillRoot("workspace", str(r), True) for r in repos)
    # A host that has every binary and variable: only format problems can exclude.
    host = Host(platform="linux", environ=EveryVariable(), which=lambda name: "/usr/bin/" + name)
    files = sorted(CORPUS.glob("*/*/SKILL.md"))
    assert len(files) == REAL.pick(1102, 46)
    loaded = available = 0
    other_os: list[str] = []
    everything = LoadRules(mcp_servers=frozenset({"rube"}))  # Composio's one MCP server
    for repo in roots:
        snap = load_snapshot((repo,), everything, host)
        available += len(snap.skills)
        excluded = [d for d in snap.diagnostics if d.excludes]
        loaded += len(snap.skills) + len(excluded)
        for diag in excluded:
            # Only a host condition can exclude a corpus skill, never its format.
            assert diag.kind is DiagnosticKind.INELIGIBLE, diag
            assert diag.reason.startswith("requires os darwin"), diag
            other_os.append(diag.skill)
    assert loaded == len(files)  # every file accounted for: loaded or excluded with a reason
    # No print past pytest's capture: it broke the progress line. The figures are here.
    assert available == len(files) - len(other_os)
    assert len(other_os) <= 10, f"{available} of {len(files)} available; macOS-only: {other_os}"


def test_composio_skills_need_their_mcp_server_configured() -> None:
    """`requires: {mcp: [rube]}` (835 Composio skills say it, in both YAML spellings):
    without that server configured, each is ineligible with the reason; with it, each
    loads. Every other skill is untouched."""
    repos = sorted(p for p in CORPUS.iterdir() if p.is_dir())
    roots = tuple(SkillRoot("workspace", str(r), True) for r in repos)
    host = Host(platform="linux", environ=EveryVariable(), which=lambda name: "/usr/bin/" + name)
    without = load_snapshot(roots, LoadRules(), host)
    with_rube = load_snapshot(roots, LoadRules(mcp_servers=frozenset({"rube"})), host)
    needs = {d.skill for d in without.diagnostics if d.kind is DiagnosticKind.INELIGIBLE
             and d.reason.startswith("requires MCP server(s) not configured: rube (")}
    declared = {p.parent.name for p in CORPUS.glob("*/*/SKILL.md")
                if "\nrequires:\n  mcp:" in p.read_text(encoding="utf-8")}
    assert len(declared) >= REAL.pick(800, 6) and needs == declared - {s.name for s in without.skills}
    assert needs <= {s.name for s in with_rube.skills}
    assert {s.name for s in without.skills} == {s.name for s in with_rube.skills} - needs


# Each rule of the Agent Skills specification, by a phrase of its one message (skills/spec.py).
SPEC_RULES = {
    "name: a character other than lowercase letters, digits, hyphens": "allows only lowercase",
    "name: differs from the folder name": "differs from the directory name",
    "metadata: a value that is not a string": "allows only string values",
    "name: starts or ends with a hyphen": "starts or ends with a hyphen",
    "description: over 1,024 characters": "allows at most 1,024",
    "no frontmatter": "no frontmatter",
}

# The same figures for tests/fixtures/corpus (46 skills, each rule broken at least twice).
SMALL_VALID = 30
SMALL_BY_RULE = {
    "name: a character other than lowercase letters, digits, hyphens": 2,
    "name: differs from the folder name": 2,
    "metadata: a value that is not a string": 7,
    "name: starts or ends with a hyphen": 2,
    "description: over 1,024 characters": 2,
    "no frontmatter": 2,
}
SMALL_VALID_BY_REPO = {
    "ComposioHQ__awesome-claude-skills": 6, "K-Dense-AI__claude-scientific-skills": 7,
    "anthropics__skills": 4, "getsentry__skills": 6, "obra__superpowers": 3,
    "openai__skills": 2, "openclaw__openclaw": 2,
}


def test_how_many_corpus_skills_the_specification_accepts() -> None:
    """The figures in docs/skills.md ("The Agent Skills specification"), as `lily validate`
    finds them: skills with no error line, and the skills breaking each rule."""
    host = Host(platform="linux", environ=EveryVariable(), which=lambda name: "/usr/bin/" + name)
    files = sorted(CORPUS.glob("*/*/SKILL.md"))
    valid: dict[str, int] = {}
    by_rule = dict.fromkeys(SPEC_RULES, 0)
    for file in files:
        check = check_skill_directory(str(file.parent), LoadRules(), host)
        repo = file.parent.parent.name
        valid[repo] = valid.get(repo, 0) + (not check.spec_breaks)
        for rule, phrase in SPEC_RULES.items():
            by_rule[rule] += any(phrase in reason for reason in check.spec_breaks)
        assert all(any(p in r for p in SPEC_RULES.values()) for r in check.spec_breaks), check
    assert (len(files), sum(valid.values())) == REAL.pick((1102, 951), (46, SMALL_VALID))
    assert by_rule == REAL.pick({
        "name: a character other than lowercase letters, digits, hyphens": 90,
        "name: differs from the folder name": 69,
        "metadata: a value that is not a string": 50,
        "name: starts or ends with a hyphen": 2,
        "description: over 1,024 characters": 2,
        "no frontmatter": 2,
    }, SMALL_BY_RULE)
    assert valid == REAL.pick({
        "ComposioHQ__awesome-claude-skills": 766, "K-Dense-AI__claude-scientific-skills": 105,
        "anthropics__skills": 11, "getsentry__skills": 26, "obra__superpowers": 14,
        "openai__skills": 10, "openclaw__openclaw": 16, "vercel-labs__agent-skills": 3,
    }, SMALL_VALID_BY_REPO)


def test_no_corpus_skill_is_taken_for_claude_code_dynamic_context() -> None:
    """No corpus SKILL.md holds a command Claude Code would run: the two `!`s quoted in
    prose (getsentry's `commit`: `` `!` before `:` ``; its `skill-scanner` describing the
    syntax) are no dynamic context, and no skill is warned about one."""
    files = sorted(CORPUS.glob("*/*/SKILL.md"))
    warned = [f"{f.parent.parent.name}/{f.parent.name}" for f in files
              if dynamic_context(f.read_text(encoding="utf-8", errors="replace"))]
    assert warned == []
    commit = (CORPUS / "getsentry__skills" / "commit" / "SKILL.md").read_text(encoding="utf-8")
    assert "Add `!` before `:` for a breaking change." in commit  # the prose is still there
