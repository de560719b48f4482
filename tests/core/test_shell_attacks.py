"""The attack set against the shell tool, through the real gate in real bubblewrap: the
network, Lily's files and `.git/hooks`, `.env` and the kernel's environment, the host's
Unix sockets and processes, `/proc`, a fork bomb, a huge output, memory. 0 escapes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lily_kernel.environment import LilyEnvironment
from lily_kernel.execution.limits import Limits
from tests.core.test_scripts import sandbox_or_skip
from tests.support.attacks import ATTACKS, Attack, Scene, attack_target, watching_processes
from tests.support.shell_gate import run_shell


@pytest.fixture
def target(workspace: Path, environ: dict[str, str]) -> Iterator[tuple[Scene, dict[str, str]]]:
    sandbox_or_skip()
    with attack_target(workspace, environ) as made:
        yield made


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_no_escape(attack: Attack, target: tuple[Scene, dict[str, str]]) -> None:
    made, env = target
    # Lily's own paths as a session protects them (every skills root, persona, home).
    protected = LilyEnvironment.load(made.workspace, env).tool_context.protected
    with watching_processes(made):
        done = run_shell(attack.command(made), made.workspace, env, protected=protected,
                         limits=Limits(memory_mb=256), timeout=60)
    assert done.status == "ran", done.output
    assert done.of("code_run")[0]["status"] in ("ok", "error"), done.output
    escaped = attack.check(made, done.output)
    assert escaped is None, escaped
    # Nothing the run started is left on the host, and no placeholder in the workspace.
    assert not [p for p in made.workspace.iterdir() if p.stat().st_size == 0 and p.is_file()]
