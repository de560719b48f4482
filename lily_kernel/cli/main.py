"""The `lily` command: list skills, validate skill folders, run a notebook, replay a
session, install.

Errors from the core (LilyError) become one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import NoReturn, cast

from lily_kernel.cli.eval import add_eval_parser
from lily_kernel.cli.mcp import add_mcp_parser
from lily_kernel.cli.replay import add_replay_parser
from lily_kernel.cli.trust import add_trust_parser
from lily_kernel.environment import Workspace
from lily_kernel.errors import LilyError, UsageError
from lily_kernel.skills import (
    Diagnostic,
    Skill,
    SkillRoot,
    check_skill_directory,
    discover_candidates,
    drop_shared_aliases,
)
from lily_kernel.visible import visible

__all__ = ["main"]


def _folder(option: str, value: str) -> Path:
    """A folder named on the command line: it must exist (a typo is not an empty root)."""
    path = Path(value)
    if not path.exists():
        raise UsageError(f"{option} {value}: does not exist.")
    if not path.is_dir():
        raise UsageError(f"{option} {value}: not a folder.")
    return path


def _override_roots(env: Workspace, args: argparse.Namespace) -> Workspace:
    """`--user-dir` and `--bundled-dir` stand for Lily's own user root and the bundled
    root (the first root of their level); other agents' folders stay as they are."""
    overrides = {"user": args.user_dir, "bundled": args.bundled_dir}
    roots, replaced = [], set()
    for r in env.skill_roots:
        if overrides.get(r.source) and r.source not in replaced:
            replaced.add(r.source)
            r = SkillRoot(r.source, os.path.abspath(overrides[r.source]),
                          os.path.exists(overrides[r.source]))
            # Named on the person's command line: their own root (trust/review.py).
            env.trust.person_roots = (*env.trust.person_roots, r.path)
        roots.append(r)
    return replace(env, skill_roots=tuple(roots))


def _cmd_skills(args: argparse.Namespace) -> int:
    from lily_kernel.cli.snapshot_json import render_snapshot_json

    workspace = _folder("--workspace", args.workspace)
    for option, value in (("--user-dir", args.user_dir), ("--bundled-dir", args.bundled_dir)):
        if value:
            _folder(option, value)
    env = _override_roots(Workspace.load(workspace), args)
    snap = env.load_snapshot(1)
    if args.json:  # the stable interface: always whole
        out = render_snapshot_json(snap)
    else:  # the command layer and the renderer: not imported for the JSON document
        from lily_kernel.commands import skills_result
        from lily_kernel.display import render_plain

        out = render_plain(skills_result(snap), width=shutil.get_terminal_size().columns) + "\n"
    sys.stdout.write(out)
    return 0


def _skill_dirs(path: Path) -> list[Path]:
    """A skill folder itself, a SKILL.md file's folder, or every skill folder of a root."""
    if path.name == "SKILL.md" and path.is_file():
        return [path.parent]
    if (path / "SKILL.md").exists() or (path / "SKILL.md").is_symlink():
        return [path]
    if path.is_dir():  # a root: its skill folders as a root's are found (nested too)
        found = discover_candidates((SkillRoot("workspace", str(path), True),))
        return sorted((Path(copies[0].folder) for copies in found.values()), key=str)
    return []


def _cmd_validate(args: argparse.Namespace) -> int:
    missing = [raw for raw in args.paths if not os.path.lexists(raw)]
    if missing:  # checked before anything is validated: bad input, not a bad skill
        raise UsageError(f"{missing[0]}: does not exist.")
    env = Workspace.load(Path.cwd())
    rules, failed = env.snapshot_rules(), False
    skills, seen = [], set()
    for raw in args.paths:
        dirs = _skill_dirs(Path(raw))
        if not dirs:
            print(f"error       {visible(raw)}: no SKILL.md here (not a skill folder or a "
                  "root of them)")
            failed = True
        for directory in dirs:
            if os.path.realpath(directory) in seen:
                continue
            seen.add(os.path.realpath(directory))
            check = check_skill_directory(str(directory), rules, env.host)
            # The Agent Skills specification's rules are errors here, whatever Lily
            # makes of the skill: this is where an author asks "is it valid?".
            for reason in check.spec_breaks:
                print(f"{'error':<11} {visible(check.name)}: {visible(reason)}")
            failed |= bool(check.spec_breaks)
            failed |= _print_diagnostics(check.diagnostics)
            if check.skill is not None:
                skills.append(check.skill)
                if not check.spec_breaks:
                    print(f"{'ok':<11} {visible(check.skill.name)} "
                          f"({check.skill.invocation_mode})")
                _print_ignored(check.skill)
    # Aliases are checked across the folders validated together, as a root would be.
    shared: list[Diagnostic] = []
    drop_shared_aliases(skills, shared)
    failed |= _print_diagnostics(shared)
    return 1 if failed else 0


def _print_ignored(skill: Skill) -> None:
    """The frontmatter keys Lily keeps but does not act on (docs/skills.md, Overrides)."""
    from lily_kernel.skills.overrides import ignored_keys

    keys = ignored_keys(skill)
    if keys:
        print(f"{'ignored':<11} {visible(skill.name)}: not acted on by Lily: "
              f"{visible(', '.join(keys))} (docs/skills.md, Overrides)")


def _print_diagnostics(diagnostics: Sequence[Diagnostic]) -> bool:
    """Print one line per diagnostic; True when one of them is an error."""
    failed = False
    for diag in diagnostics:
        label = {"malformed": "error", "policy": "error"}.get(diag.kind.value, diag.kind.value)
        failed |= label == "error"
        print(f"{label:<11} {visible(diag.skill)}: {visible(diag.reason)}")
    return failed


def _cmd_run(args: argparse.Namespace) -> int:
    from lily_kernel.cli.run import run_notebook

    output = Path(args.output) if args.output else None
    return run_notebook(Path(args.notebook), output)


def _cmd_install(args: argparse.Namespace) -> int:
    from lily_kernel.cli.install import install_kernelspec

    path = install_kernelspec(user=args.user, sys_prefix=args.sys_prefix, prefix=args.prefix)
    print(f"Installed the Lily kernelspec in {path}")
    return 0


class _Parser(argparse.ArgumentParser):
    """A usage error is one line, as Lily's other errors are, naming where help is
    (argparse prints the whole usage first, four lines for `lily eval`)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {visible(message)} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="lily", description="Lily, the notebook agent.")
    sub = cast("argparse._SubParsersAction[argparse.ArgumentParser]",
               parser.add_subparsers(dest="command", required=True, parser_class=_Parser))

    skills = sub.add_parser("skills", help="print the skill snapshot with its diagnostics")
    skills.add_argument("--workspace", default=".", help="the workspace folder (default: .)")
    skills.add_argument("--user-dir", help="user skills root (default: ~/.lily/skills)")
    skills.add_argument("--bundled-dir", help="bundled skills root")
    skills.add_argument("--json", action="store_true", help="the stable JSON document")
    skills.set_defaults(func=_cmd_skills)

    validate = sub.add_parser("validate", help="check skill folders; non-zero exit on errors")
    validate.add_argument("paths", nargs="+", metavar="PATH")
    validate.set_defaults(func=_cmd_validate)

    run = sub.add_parser("run", help="execute a notebook with the Lily kernel, print it")
    run.add_argument("notebook", metavar="NOTEBOOK")
    run.add_argument("--output", help="also write the executed notebook here")
    run.set_defaults(func=_cmd_run)

    add_replay_parser(sub)
    add_eval_parser(sub)
    add_trust_parser(sub)
    add_mcp_parser(sub)

    install = sub.add_parser("install", help="install the Lily kernelspec")
    where = install.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="in the user's Jupyter folder")
    where.add_argument("--sys-prefix", action="store_true", help="in sys.prefix (venv/conda)")
    where.add_argument("--prefix", help="under this prefix")
    install.set_defaults(func=_cmd_install)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except LilyError as exc:
        print(f"lily: {visible(str(exc), lines=True)}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
