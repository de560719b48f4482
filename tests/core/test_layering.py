"""SPEC §1: the deterministic core imports neither ipykernel nor litellm."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "lily_kernel"
CORE = ["skills", "persona", "session", "commands", "tools", "prompting", "config.py",
        "errors.py", "events.py", "redaction.py"]
FORBIDDEN = ("ipykernel", "jupyter_client", "litellm", "lily_kernel.kernel", "lily_kernel.llm",
             "lily_kernel.runtime", "lily_kernel.cli")


def imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("part", CORE)
def test_core_modules_do_not_import_upper_layers(part: str) -> None:
    target = PACKAGE / part
    files = [target] if target.is_file() else sorted(target.rglob("*.py"))
    assert files
    for file in files:
        bad = {n for n in imports_of(file) if n.startswith(FORBIDDEN)}
        assert not bad, f"{file.relative_to(PACKAGE)} imports {sorted(bad)}"


def test_skills_layer_does_not_import_tools_or_commands() -> None:
    for file in sorted((PACKAGE / "skills").rglob("*.py")):
        bad = {n for n in imports_of(file)
               if n.startswith(("lily_kernel.tools", "lily_kernel.commands",
                                "lily_kernel.prompting", "lily_kernel.session"))}
        assert not bad, f"{file.name} imports {sorted(bad)}"


def test_importing_the_runtime_loads_neither_jupyter_nor_litellm() -> None:
    code = ("import sys, lily_kernel.runtime, lily_kernel.cli.main; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('ipykernel', 'litellm', 'jupyter_client', 'openai')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout.strip()
    assert out == "[]"
