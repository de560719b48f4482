"""SPEC §1: the deterministic core imports neither ipykernel nor litellm, and each layer
imports only the layers below it (the table below is docs/architecture.md's)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "lily_kernel"
CORE = ["skills", "persona", "session", "commands", "tools", "prompting", "display", "config.py",
        "errors.py", "events", "host_files.py", "host_patterns.py", "redaction.py",
        "validation.py", "visible.py"]

# What each part of lily_kernel may import from lily_kernel (besides itself). No sideways
# edges: the kernel goes through the runtime only, commands hand the runtime an intent
# instead of building prompts, llm knows the model settings but not the session.
ALLOWED = {
    "errors": set(),
    "validation": set(),
    "events": {"config", "errors", "redaction", "skills"},  # field enums; secrets kept out
    "redaction": set(),
    "visible": set(),
    # Files sandboxed code could touch, opened on the host without following a swap.
    "host_files": set(),
    # An error's short traceback: the words the model reads (prompting/runs.py).
    "display": {"config", "prompting", "visible"},
    # How network.allow and network.deny name hosts (config checks, network/ matches).
    "host_patterns": set(),
    "config": {"errors", "host_patterns", "validation"},
    "persona": set(),
    "skills": {"config", "errors", "validation"},
    # Where and how code runs (bubblewrap, the reaper, the runner, the subkernel); what it
    # says of a run (its log's output, a refusal) worded by prompting/runs.py.
    "execution": {"errors", "host_files", "prompting", "redaction", "visible"},
    # The sandbox's way out: the per-session proxy and the host policy (network/), below
    # the runtime that asks the person and beside execution, which binds its socket in.
    "network": {"config", "errors", "events", "host_patterns", "prompting", "validation",
                "visible"},
    "tools": {"config", "display", "errors", "events", "execution", "host_files", "prompting",
              "redaction", "validation", "visible"},
    "session": {"config", "persona", "skills"},
    "prompting": {"events", "persona", "skills", "visible"},
    "llm": {"config", "errors", "redaction"},
    "commands": {"config", "display", "errors", "execution", "mcp_tools", "persona",
                 "prompting", "session", "skills", "tools", "visible"},
    # MCP servers' tools on the one tool seam (the SDK imported lazily, where used).
    "mcp_tools": {"config", "errors", "events", "execution", "prompting", "tools",
                  "validation"},
    "trust": {"config", "errors", "skills", "tools", "validation", "visible"},
    # What a session is built from, one workspace's files read (environment.py).
    "environment": {"commands", "config", "errors", "execution", "llm", "mcp_tools", "persona",
                    "session", "skills", "tools", "trust"},
    "runtime": {"commands", "config", "environment", "errors", "events", "execution", "llm",
                "mcp_tools", "network", "persona", "record",
                "prompting", "redaction", "session", "skills", "tools", "trust", "visible", "display"},
    # Replay and trigger evals drive the runtime, beside the CLI.
    "replay": {"commands", "config", "display", "errors", "events", "execution", "llm",
               "persona", "record", "runtime",
               "skills", "tools", "trust", "validation"},
    # The session's record: each chat turn's key, answered from the record (record/):
    # given frozen values and the log's emit, never the runtime (record/seam.py).
    "record": {"commands", "config", "display", "errors", "events", "llm", "validation"},
    "evals": {"errors", "prompting", "runtime", "skills"},
    # The kernel's session keeps the record that Run All is answered from (record/).
    "lifecycle": {"commands", "errors", "runtime"},  # a runtime on a thread of its own
    "kernel": {"__init__", "display", "errors", "lifecycle", "redaction", "runtime",
               "visible"},
    # `lily mcp`: a thin edge beside the kernel, over the runtime's session and gate.
    "mcp_server": {"errors", "host_files", "runtime", "skills", "tools"},
    "cli": {"commands", "display", "environment", "errors", "evals", "mcp_server", "replay",
            "runtime", "skills", "trust", "visible"},
    "__main__": {"kernel"},
    "__init__": set(),
}
FORBIDDEN = ("ipykernel", "jupyter_client", "litellm", "lily_kernel.kernel", "lily_kernel.llm",
             "lily_kernel.runtime", "lily_kernel.record", "lily_kernel.replay", "lily_kernel.evals",
             "lily_kernel.cli")


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


def _part(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def test_each_layer_imports_only_the_layers_below_it() -> None:
    found: dict[str, set[str]] = {}
    for file in sorted(PACKAGE.rglob("*.py")):
        part = _part(file)
        for name in imports_of(file):
            if name == "lily_kernel":
                target = "__init__"
            elif name.startswith("lily_kernel."):
                target = name.split(".")[1]
            else:
                continue
            if target != part:
                found.setdefault(part, set()).add(target)
    assert set(found) | set(ALLOWED) == set(ALLOWED), "a new part needs its row in ALLOWED"
    wrong = {part: sorted(targets - ALLOWED[part]) for part, targets in found.items()
             if targets - ALLOWED[part]}
    assert wrong == {}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """Every lily_kernel module and the lily_kernel modules it imports: anywhere in the
    file (inside functions and under TYPE_CHECKING too), each `from package import name`
    that names a submodule counted as an import of that submodule."""
    files = {_module_name(f): f for f in sorted(PACKAGE.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for module, file in files.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name in files)
            elif isinstance(node, ast.ImportFrom) and node.module in files:
                named = {f"{node.module}.{a.name}" for a in node.names}
                edges.update(named & files.keys() or {node.module})
        graph[module] = edges - {module}
    return graph


def test_no_import_cycle_between_modules() -> None:
    """No module reaches itself through imports (runtime/'s turn engine included),
    however the imports are written (lazily, or only for the type checker)."""
    graph = _import_graph()
    assert "lily_kernel.runtime.turn" in graph
    cycles = []
    for start in graph:
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for target in graph.get(node, ()):
                if target == start:
                    cycles.append(" -> ".join([*path, start]))
                elif target not in seen:
                    seen.add(target)
                    stack.append((target, [*path, target]))
    assert cycles == []


def test_skills_layer_does_not_import_tools_or_commands() -> None:
    for file in sorted((PACKAGE / "skills").rglob("*.py")):
        bad = {n for n in imports_of(file)
               if n.startswith(("lily_kernel.tools", "lily_kernel.commands",
                                "lily_kernel.prompting", "lily_kernel.session"))}
        assert not bad, f"{file.name} imports {sorted(bad)}"


def test_importing_the_runtime_loads_neither_jupyter_nor_litellm() -> None:
    code = ("import sys, lily_kernel.runtime, lily_kernel.cli.main; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('ipykernel', 'litellm', 'jupyter_client', 'openai', 'pydantic')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout.strip()
    assert out == "[]"


def test_no_module_is_over_400_lines() -> None:
    """Small modules with one responsibility (docs/architecture.md): a module that grows
    past 400 lines is split by what it does."""
    long = {str(path.relative_to(PACKAGE)): count for path in PACKAGE.rglob("*.py")
            if (count := len(path.read_text().splitlines())) > 400}
    assert long == {}
