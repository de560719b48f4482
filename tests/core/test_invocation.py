"""Claude Code's invocation rules (skills/invocation.py): a body's placeholders filled
in one pass, the arguments split shell-style, and the loader's warnings (a built-in's
name, an alias's name, dynamic context)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lily_kernel.skills import LoadRules, SkillRoot, expand_skill_body, load_snapshot
from lily_kernel.skills.invocation import (
    EXPANSION_CUT,
    FOLDER_PLACEHOLDERS,
    MAX_EXPANSION_GROWTH,
    dynamic_context,
    split_arguments,
)
from lily_kernel.tools import skill_files
from tests.conftest import write_skill

BODY = ("All: $ARGUMENTS\nFirst: $0, second: $1, third: [$2]\nIndexed: $ARGUMENTS[1]\n"
        "Named: $who / $what\nFolder: ${CLAUDE_SKILL_DIR}/x and {baseDir}/y\n")


def test_split_is_shell_style_with_a_fallback() -> None:
    assert split_arguments('hello "big world"') == ("hello", "big world")
    assert split_arguments("'a b'  c\nd") == ("a b", "c", "d")
    assert split_arguments('say "hi there') == ("say", '"hi', "there")  # unbalanced
    assert split_arguments("") == ()


def test_every_placeholder_of_an_explicit_invocation() -> None:
    text = expand_skill_body(BODY, "/skills/argskill", 'hello "big world"', ("who", "what"))
    assert text == ('All: hello "big world"\nFirst: hello, second: big world, third: []\n'
                    "Indexed: big world\nNamed: hello / big world\n"
                    "Folder: /skills/argskill/x and /skills/argskill/y\n")


def test_a_model_selected_skill_keeps_its_argument_placeholders() -> None:
    text = expand_skill_body(BODY, "/skills/argskill", None, ("who", "what"))
    assert text == BODY.replace("${CLAUDE_SKILL_DIR}", "/skills/argskill").replace(
        "{baseDir}", "/skills/argskill")
    assert expand_skill_body("No placeholder $1.", "/f") == "No placeholder $1."


def test_one_pass_nothing_typed_is_expanded_again() -> None:
    typed = "$1 {baseDir} $ARGUMENTS"
    assert expand_skill_body("[$ARGUMENTS] [$0]", "/f", typed) == f"[{typed}] [$1]"


def test_an_expansion_stops_growing_and_says_so() -> None:
    body = "$ARGUMENTS\n" * 20_000
    request = "x" * 10_000
    text = expand_skill_body(body, "/f", request)  # 200 MB, expanded in full
    assert len(text) <= len(body) + MAX_EXPANSION_GROWTH + len(request) + len(EXPANSION_CUT)
    assert text.count(EXPANSION_CUT) == 1 and "KiB" in EXPANSION_CUT
    expanded, rest = text.split(EXPANSION_CUT)
    assert expanded == (request + "\n") * (len(expanded) // (len(request) + 1))
    assert rest.startswith("$ARGUMENTS\n") and set(rest.split()) == {"$ARGUMENTS"}
    folders = expand_skill_body("{baseDir}/x " * 25_000, "/f" * 50, None)  # 2.5 MB in full
    assert len(folders) < 25_000 * 12 + MAX_EXPANSION_GROWTH + len(EXPANSION_CUT)
    assert EXPANSION_CUT in folders


def test_ordinary_expansions_are_whole() -> None:
    request = "y" * (2 * MAX_EXPANSION_GROWTH)  # one copy of a long request always fits
    assert expand_skill_body("Do: $ARGUMENTS.", "/f", request) == f"Do: {request}."
    text = expand_skill_body("$ARGUMENTS " * 20, "/f", "z" * 10_000)
    assert text == ("z" * 10_000 + " ") * 20


@pytest.mark.parametrize(("body", "expected"), [
    ("Costs $1,456.90 and $0.001", "Costs $1,456.90 and $0.001"),  # prices stay
    ("From $1.", "From b."),  # a sentence's end is no price
    ("$1st $ARGUMENTSX $10", "$1st $ARGUMENTSX "),  # not placeholders; $10 is past the end
    ("$old-name / $old", "x / y"),  # the longest name first
])
def test_what_is_and_is_not_a_placeholder(body: str, expected: str) -> None:
    assert expand_skill_body(body, "/f", "a b", ("old", "old-name")) == expected.replace(
        "x / y", "b / a")


def test_named_arguments_as_a_string_and_unusable_names(tmp_path: Path) -> None:
    write_skill(tmp_path, "named", "---\narguments: issue branch\n---\n$issue on $branch\n")
    snap = load_snapshot((SkillRoot("workspace", str(tmp_path), True),), LoadRules())
    skill = snap.get("named")
    assert skill is not None and skill.argument_names == ("issue", "branch")
    assert expand_skill_body("$ARGUMENTS $0", "/f", "x", ("ARGUMENTS", "0")) == "x x"


def test_the_folder_placeholders_are_the_ones_read_skill_file_accepts() -> None:
    assert skill_files._FOLDER_PLACEHOLDERS == FOLDER_PLACEHOLDERS


def test_dynamic_context_is_found_inline_and_fenced() -> None:
    assert dynamic_context("Plain `code` and a ! mark.") is None
    warning = dynamic_context("- Diff: !`gh pr diff`\n```!\nnode --version\n```\n")
    assert warning == ("2 Claude Code dynamic context command(s), e.g. !`gh pr diff`: "
                       "!`command` lines are not run by Lily; the model sees them as text")


@pytest.mark.parametrize("body", [
    "- Scope is optional. Add `!` before `:` for a breaking change.",  # getsentry's commit
    "- **`!`command`` syntax**: runs shell commands at load time",  # its skill-scanner
    "Use `foo`!`bar` or $!`x` in a sentence.",  # `!` after a backtick or a `$`
    "An unclosed fence:\n```!\nnode --version\n",  # Claude Code runs no such block
    "Wow!`not a command`",  # after a word, as Claude Code reads it
])
def test_a_quoted_exclamation_mark_is_prose_not_dynamic_context(body: str) -> None:
    assert dynamic_context(body) is None


@pytest.mark.parametrize(("body", "count", "first"), [
    ("!`git status`", 1, "!`git status`"),  # at the start
    ("Branch: !`git branch --show-current`", 1, "!`git branch --show-current`"),
    ("- a\n\t!`date`\n", 1, "!`date`"),  # after a tab, at a line's start
    ("Intro\n```!\nnode --version\n!`inside`\n```\n", 1, "```! node --version !`inside` ```"),
    ("x\n```! \ngit log -1\n```\nthen !`date` and (!`no`)", 2, "```! git log -1 ```"),
])
def test_dynamic_context_as_claude_code_runs_it(body: str, count: int, first: str) -> None:
    assert dynamic_context(body) == (
        f"{count} Claude Code dynamic context command(s), e.g. {first}: !`command` lines are "
        "not run by Lily; the model sees them as text")


def test_loader_warns_of_builtin_names_alias_clashes_and_dynamic_context(
        tmp_path: Path) -> None:
    write_skill(tmp_path, "help", "---\nsummary: A skill called help\n---\nBody\n")
    write_skill(tmp_path, "skills", "---\nuser-invocable: false\n---\nModel only.\n")
    write_skill(tmp_path, "planner", "---\ncommand: review\n---\nPlans.\n")
    write_skill(tmp_path, "review", "---\nsummary: Reviews\n---\nNow: !`date`\n")
    snap = load_snapshot((SkillRoot("workspace", str(tmp_path), True),),
                         LoadRules(reserved_commands=frozenset({"help", "skills"})))
    warnings = {(d.skill, d.reason) for d in snap.warnings}
    assert warnings == {
        ("help", "/help is the built-in command; invoke this skill with /skill help"),
        ("review", "/review is the alias of the skill 'planner' (command: review), which "
                   "wins; invoke 'review' with /skill review"),
        ("review", "1 Claude Code dynamic context command(s), e.g. !`date`: !`command` "
                   "lines are not run by Lily; the model sees them as text"),
    }
    assert [s.name for s in snap.skills] == ["help", "planner", "review", "skills"]
