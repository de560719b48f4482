"""The attack set against the `python` tool: each attack of tests/support/attacks.py run
from the model's Python (a real IPython subkernel in real bubblewrap, through the real
gate), judged by the same check as the shell's. 0 escapes. The subkernel is a process
that stays between runs, so its own environment and the host's processes are what an
attacker reaches first: the attacks read /proc from inside it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from lily_kernel.environment import Workspace
from lily_kernel.execution.limits import Limits
from tests.core.test_scripts import sandbox_or_skip
from tests.support.attacks import (
    ATTACKS,
    SECRET,
    Attack,
    Scene,
    attack_target,
    bomb_bounded,
    watching_processes,
)
from tests.support.shell_gate import ShellCall, run_python


@pytest.fixture
def target(workspace: Path, environ: dict[str, str]) -> Iterator[tuple[Scene, dict[str, str]]]:
    sandbox_or_skip()
    with attack_target(workspace, environ) as made:
        yield made


def run_python_attack(code: str, made: Scene, env: dict[str, str]) -> ShellCall:
    """`code` as the model's `python` call, allowed, with Lily's own paths protected as
    a session protects them; the kernel ends afterwards."""
    protected = Workspace.load(made.workspace, env).tool_context.run_protected
    return run_python(code, made.workspace, env, protected=protected,
                      limits=Limits(memory_mb=512), timeout=60)


def _python_capped(made: Scene, output: str) -> str | None:
    """The model reads at most the cap of 50 MB printed (its own marker, not the shell's)."""
    if "[... output truncated:" not in output:
        return "not truncated: " + output[-200:]
    return None if len(output) < 25_000 else f"{len(output):,} characters reached the model"


def _python_bounded(made: Scene, output: str) -> str | None:
    """The bomb stays in the kernel's control group: the host's processes bounded while
    it runs (in the kernel it may starve the command's own `echo`, unlike the shell
    tool's run), and none of it left once the kernel ends (checked below)."""
    return bomb_bounded(made)


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_no_escape_from_python(attack: Attack, target: tuple[Scene, dict[str, str]]) -> None:
    made, env = target
    with watching_processes(made):
        done = run_python_attack(attack.python_code(made), made, env)
    output = done.output
    runs = done.of("code_run")
    assert [r["tool"] for r in runs] == ["python"], output
    check = {"huge_output": _python_capped, "fork_bomb": _python_bounded}.get(
        attack.name, attack.check)
    escaped = check(made, output)
    assert escaped is None, escaped
    # The kernel ended (run_python closes it): nothing the attack started is left.
    assert not [p for p in psutil.process_iter(["cwd"]) if p.info["cwd"] and
                p.info["cwd"].startswith(str(made.workspace))]


def test_the_kernels_own_environment_holds_no_secret(
        target: tuple[Scene, dict[str, str]]) -> None:
    """Not only what a command it starts sees: the subkernel process itself."""
    made, env = target
    output = run_python_attack("import os\nprint(sorted(os.environ))\n"
                               "print(open('/proc/self/environ').read())", made, env).output
    assert SECRET not in output and "OPENAI_API_KEY" not in output
    assert made.host_environ_entry() not in output
