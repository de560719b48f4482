"""The `lily` command as a person runs it: a real subprocess, the JSON contract."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, skill_text, write_skill

LILY = [sys.executable, "-m", "lily_kernel.cli.main"]
SKILL_KEYS = ["name", "source", "path", "summary", "invocation_mode", "command",
              "command_tool", "requires_tools"]


def lily(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LILY, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=60, check=False)


@pytest.fixture
def env(environ: dict[str, str]) -> dict[str, str]:
    return {**environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def build_tree(base: Path, order: list[str]) -> None:
    texts = {
        "zeta": skill_text("Zeta", command="z"),
        "alpha": skill_text("Alpha"),
        "Mixed": skill_text("Mixed case"),
        "broken": "---\nsummary: [x\n---\n",
        "dispatch": "---\nsummary: d\ninvocation_mode: tool_dispatch\ncommand_tool: list\n---\n",
    }
    for name in order:
        write_skill(base / "skills", name, texts[name])


def test_json_has_exactly_the_contract_shape(workspace: Path, env: dict[str, str]) -> None:
    build_tree(workspace, ["zeta", "alpha", "Mixed", "broken", "dispatch"])
    done = lily("skills", "--workspace", str(workspace), "--json", env=env)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert list(doc) == ["version", "digest", "skills", "diagnostics"]
    assert doc["version"] == 1 and len(doc["digest"]) == 64
    assert [s["name"] for s in doc["skills"]] == ["Mixed", "alpha", "dispatch", "zeta"]
    assert all(list(s) == SKILL_KEYS for s in doc["skills"])
    zeta = doc["skills"][-1]
    assert zeta == {"name": "zeta", "source": "workspace",
                    "path": str(workspace.resolve() / "skills" / "zeta" / "SKILL.md"),
                    "summary": "Zeta", "invocation_mode": "prompt_rewrite", "command": "z",
                    "command_tool": None, "requires_tools": []}
    assert doc["diagnostics"][0]["kind"] == "malformed"
    assert list(doc["diagnostics"][0]) == ["kind", "skill", "source", "path", "reason"]


def test_json_is_byte_identical_whatever_the_creation_order(workspace: Path,
                                                            env: dict[str, str]) -> None:
    names = ["zeta", "alpha", "Mixed", "broken", "dispatch"]
    build_tree(workspace, names)
    first = lily("skills", "--workspace", str(workspace), "--json", env=env).stdout
    shutil.rmtree(workspace / "skills")
    build_tree(workspace, list(reversed(names)))
    second = lily("skills", "--workspace", str(workspace), "--json", env=env).stdout
    assert first == second and first.startswith("{")


def test_user_and_bundled_dirs_from_flags(tmp_path: Path, env: dict[str, str]) -> None:
    user, bundled = tmp_path / "u", tmp_path / "b"
    write_skill(user, "same", skill_text("user copy"))
    write_skill(bundled, "same", skill_text("bundled copy"))
    done = lily("skills", "--workspace", str(tmp_path), "--user-dir", str(user),
                "--bundled-dir", str(bundled), "--json", env=env)
    doc = json.loads(done.stdout)
    assert [(s["name"], s["source"]) for s in doc["skills"]] == [("same", "user")]
    assert [(d["kind"], d["source"]) for d in doc["diagnostics"]] == [("shadowed", "bundled")]


def test_text_output_lists_skills(workspace: Path, env: dict[str, str]) -> None:
    build_tree(workspace, ["alpha"])
    done = lily("skills", "--workspace", str(workspace), env=env)
    assert done.returncode == 0
    assert done.stdout.startswith("Skills: 1 available (snapshot 1, digest ")


def test_broken_config_is_a_clear_error(workspace: Path, env: dict[str, str]) -> None:
    (workspace / "lily.yaml").write_text("nonsense_key: 1\n")
    done = lily("skills", "--workspace", str(workspace), env=env)
    assert done.returncode == 2
    assert done.stderr == f"lily: {workspace.resolve() / 'lily.yaml'}: key 'nonsense_key': unknown key.\n"


def test_validate_exit_codes(tmp_path: Path, env: dict[str, str]) -> None:
    rules, spec = FIXTURES / "rules", FIXTURES / "spec"
    ok = lily("validate", str(spec / "pdf-tools"), str(spec / "flow-style" / "SKILL.md"),
              env=env, cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout
    assert ok.stdout.splitlines() == ["ok          pdf-tools (prompt_rewrite)",
                                      "ok          flow-style (prompt_rewrite)"]
    bad = lily("validate", str(rules / "invalid_yaml"), str(spec / "pdf-tools"), env=env,
               cwd=tmp_path)
    assert bad.returncode == 1
    assert bad.stdout.startswith("error       invalid_yaml: invalid YAML frontmatter")
    whole_root = lily("validate", str(rules), env=env, cwd=tmp_path)
    assert whole_root.returncode == 1
    assert "error       python_tag:" in whole_root.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = lily("validate", str(empty), env=env, cwd=tmp_path)
    assert nothing.returncode == 1 and "no SKILL.md here" in nothing.stdout


SPEC_CASES = sorted(p.name for p in (FIXTURES / "spec").iterdir())


@pytest.mark.parametrize("case", SPEC_CASES)
def test_validate_applies_the_agent_skills_specification(tmp_path: Path, env: dict[str, str],
                                                         case: str) -> None:
    """Each fixture folder is one rule; `expected.txt` is what `lily validate` prints for
    it. A rule of the specification broken is an error (exit 1), whether or not Lily
    loads the skill."""
    folder = FIXTURES / "spec" / case
    expected = (folder / "expected.txt").read_text().splitlines()
    done = lily("validate", str(folder), env=env, cwd=tmp_path)
    assert done.stdout.splitlines() == expected
    assert done.returncode == (1 if any(line.startswith("error") for line in expected) else 0)


def test_validate_names_the_issues_examples(tmp_path: Path, env: dict[str, str]) -> None:
    """The names the tester found accepted (issue #22, item 9), with their exact lines."""
    spec = FIXTURES / "spec"
    done = lily("validate", *(str(spec / n) for n in ("-lead", "Upper", "a--b", "bad_name!")),
                env=env, cwd=tmp_path)
    assert done.returncode == 1
    rule = "the Agent Skills specification"
    assert done.stdout.splitlines() == [
        f"error       -lead: name '-lead' starts or ends with a hyphen; {rule} forbids it",
        f"error       Upper: name 'Upper' has 'U'; {rule} allows only lowercase letters, "
        "digits and hyphens",
        f"error       a--b: name 'a--b' has two hyphens in a row; {rule} forbids it",
        f"error       bad_name!: name 'bad_name!' has '_', '!'; {rule} allows only lowercase "
        "letters, digits and hyphens",
    ]


def test_validate_checks_the_specification_on_a_skill_ineligible_here(
        tmp_path: Path, env: dict[str, str]) -> None:
    """Whether a skill runs on this machine is no excuse: its format is still checked."""
    write_skill(tmp_path / "skills", "Mac-Only",
                "---\nname: Mac-Only\ndescription: d\neligibility:\n  os: [win32]\n---\n")
    done = lily("validate", str(tmp_path / "skills" / "Mac-Only"), env=env, cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0].startswith("error       Mac-Only: name 'Mac-Only' has 'M', 'O'")
    assert lines[1].startswith("ineligible  Mac-Only: requires os win32")


def test_validate_a_missing_path_is_bad_input(tmp_path: Path, env: dict[str, str]) -> None:
    rules = FIXTURES / "rules"
    done = lily("validate", str(rules / "ok_minimal"), str(tmp_path / "nowhere"), env=env,
                cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")  # checked before anything is validated
    assert done.stderr == f"lily: {tmp_path / 'nowhere'}: does not exist.\n"


def test_validate_errors_are_the_loaders_warnings(tmp_path: Path, env: dict[str, str]) -> None:
    root = tmp_path / "skills"
    write_skill(root, "haiku", "---\nname: haiku\ndescription: Haiku\ncommand: haiku\n---\n")
    write_skill(root, "limerick", "---\nname: limerick\ndescription: A copy of haiku\n"
                                  "command: haiku\n---\n")
    write_skill(root, "wordy", f"---\nname: wordy\ndescription: {'d' * 1068}\n"
                               f"compatibility: {'c' * 501}\n---\nBody.\n")
    write_skill(root, "long", f"---\nname: {'n' * 65}\ndescription: fine\n---\nBody.\n")
    done = lily("validate", str(root), env=env, cwd=tmp_path)
    lines = done.stdout.splitlines()
    assert done.returncode == 1, done.stdout
    assert "error       wordy: description is 1,068 characters; the Agent Skills " \
           "specification allows at most 1,024" in lines
    assert any(line.startswith("error       wordy: compatibility is 501 characters")
               for line in lines)
    assert any(line.startswith("error       long: name is 65 characters") for line in lines)
    assert any(line.startswith("error       long: name 'nnn") for line in lines)
    for name, other in (("haiku", "limerick"), ("limerick", "haiku")):
        assert (f"warning     {name}: alias /haiku is also claimed by {other}; dropped for all "
                f"of them (use /skill {name})") in lines
    # The loader reports the same findings, word for word, as warnings: it loads them all.
    skills = json.loads(lily("skills", "--workspace", str(tmp_path), "--json", env=env).stdout)
    assert len(skills["skills"]) == 4
    assert {d["kind"] for d in skills["diagnostics"]} == {"warning"}
    reasons = {(d["skill"], d["reason"]) for d in skills["diagnostics"]}
    assert {(line.split()[1].rstrip(":"), line.split(": ", 1)[1])
            for line in lines if line.startswith(("warning", "error"))} == reasons


@pytest.mark.parametrize("option", ["--workspace", "--user-dir", "--bundled-dir"])
def test_skills_folders_that_do_not_exist_are_bad_input(tmp_path: Path, env: dict[str, str],
                                                        option: str) -> None:
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    base = ["skills", "--workspace", str(tmp_path)]
    for value, said in ((tmp_path / "missing", "does not exist"), (a_file, "not a folder")):
        done = lily(*base, option, str(value), env=env)
        assert (done.returncode, done.stdout) == (2, ""), done
        assert done.stderr == f"lily: {option} {value}: {said}.\n"


def test_skills_text_fits_the_terminal_and_json_stays_whole(workspace: Path,
                                                           env: dict[str, str]) -> None:
    long = "A summary that goes on and on " * 18  # ~540 characters
    write_skill(workspace / "skills", "wordy", skill_text(long.strip(), command="wordy"))
    write_skill(workspace / "skills", "bad", "---\nsummary: [x\n---\n")
    for columns in (100, 60):
        done = lily("skills", "--workspace", str(workspace), env={**env, "COLUMNS": str(columns)})
        table = done.stdout.split("\n\n")[1].splitlines()
        assert max(len(line) for line in table) <= columns, done.stdout
        row = next(line for line in table if line.startswith("wordy"))
        assert "…" in row and row.endswith("/wordy")  # the summary gives way, not the alias
    doc = json.loads(lily("skills", "--workspace", str(workspace), "--json",
                          env={**env, "COLUMNS": "60"}).stdout)
    assert doc["skills"][0]["summary"] == long.strip()


def test_skills_and_validate_print_no_escape_codes_from_skill_names(
        workspace: Path, env: dict[str, str]) -> None:
    """A folder named with an ANSI escape and a bidirectional override printed them raw:
    the terminal cleared a line and reversed the text."""
    name = "clean\x1b[2K\u202eevil"
    write_skill(workspace / "skills", name, skill_text("Summary with \x1b[31mred\x1b[0m"))
    listing = lily("skills", "--workspace", str(workspace), env=env)
    assert listing.returncode == 0, listing.stderr
    assert "\x1b" not in listing.stdout and "\u202e" not in listing.stdout
    assert "clean\\x1b[2K\\u202eevil" in listing.stdout
    checked = lily("validate", str(workspace / "skills" / name), env=env)
    assert "\x1b" not in checked.stdout and "\u202e" not in checked.stdout
    assert "clean\\x1b[2K\\u202eevil" in checked.stdout


@pytest.mark.parametrize(("args", "said"), [
    (("eval", "--runs", "abc"), "lily eval: argument --runs: invalid int value: 'abc' "
                                "(see `lily eval --help`)\n"),
    (("skills", "--bogus"), "lily: unrecognized arguments: --bogus (see `lily --help`)\n"),
])
def test_a_usage_error_is_one_line(tmp_path: Path, env: dict[str, str], args: tuple[str, ...],
                                   said: str) -> None:
    """argparse printed the whole usage first: four lines for `lily eval --runs abc`."""
    done = lily(*args, env=env, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", said)
