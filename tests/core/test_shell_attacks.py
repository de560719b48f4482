"""The attack set against the shell tool, through the real gate in real bubblewrap: the
network, Lily's files and `.git/hooks`, the person's environments and dot-entries, `.env`
and the kernel's environment, the host's Unix sockets and processes, `/proc`, a fork
bomb, a huge output, memory. 0 escapes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lily_kernel.environment import Workspace
from lily_kernel.execution.limits import Limits
from tests.core.test_scripts import sandbox_or_skip
from tests.support.attacks import (
    ATTACKS,
    DOTENV_SECRET,
    Attack,
    Scene,
    attack_target,
    watching_processes,
)
from tests.support.shell_gate import run_shell


@pytest.fixture
def target(workspace: Path, environ: dict[str, str]) -> Iterator[tuple[Scene, dict[str, str]]]:
    sandbox_or_skip()
    with attack_target(workspace, environ) as made:
        yield made


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_no_escape(attack: Attack, target: tuple[Scene, dict[str, str]]) -> None:
    made, env = target
    # Lily's own paths as a session protects them from runs (every skills root, persona,
    # home; skills/ too: the environment trusts this workspace, LILY_TRUST=workspace).
    protected = Workspace.load(made.workspace, env).tool_context.run_protected
    with watching_processes(made):
        done = run_shell(attack.command(made), made.workspace, env, protected=protected,
                         limits=Limits(memory_mb=256), timeout=60)
    assert done.status == "ran", done.output
    assert done.of("code_run")[0]["status"] in ("ok", "error"), done.output
    escaped = attack.check(made, done.output)
    assert escaped is None, escaped
    # Nothing the run started is left on the host, and no placeholder in the workspace.
    assert not [p for p in made.workspace.iterdir() if p.stat().st_size == 0 and p.is_file()]


def test_names_one_run_makes_protect_nothing_in_the_next(
        target: tuple[Scene, dict[str, str]]) -> None:
    """The finding as it was made (#34, HIGH 3): one command makes 5,000 files that sort
    before every dot-entry, the next writes the person's .venv and reads .env; and a
    .envrc it makes is gone when it ends, the model told so."""
    made, env = target
    (made.workspace / ".venv" / "bin").mkdir(parents=True)
    (made.workspace / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (made.workspace / ".venv" / "bin" / "activate").write_text("# the person's own\n")
    protected = Workspace.load(made.workspace, env).tool_context.run_protected
    decoys = run_shell("for i in $(seq 0 4999); do echo decoy > ./-$i; done; ls | wc -l",
                       made.workspace, env, protected=protected, timeout=60)
    assert decoys.status == "ran" and len(list(made.workspace.glob("-*"))) == 5_000
    done = run_shell("echo pwned >> .venv/bin/activate; cat .env | rev; echo 'echo pwned' > .envrc",
                     made.workspace, env, protected=protected, timeout=60)
    assert (made.workspace / ".venv" / "bin" / "activate").read_text() == "# the person's own\n"
    assert DOTENV_SECRET[::-1] not in done.output
    assert not (made.workspace / ".envrc").exists()
    assert "[removed after the run: .envrc (the sandbox keeps no new dot-entry" in done.output
