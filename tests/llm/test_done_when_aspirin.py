"""Issue #29's "Done when", as a kernel test: "what is the molecular weight of aspirin?"
with a chemistry skill (tests/fixtures/skill_files/chemistry: compute it in Python from
an atomic-weight table) shows the code, asks once, runs it in the sandbox and answers
with the number; the person's `/python` sees the same variables; nothing is written
outside the workspace. A real Lily kernel over ZeroMQ, the loopback model scripting the
`python` call, a real IPython subkernel in real bubblewrap.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from tests.core.test_scripts import sandbox_or_skip
from tests.kernel.conftest import lily_kernel
from tests.llm.test_kernel_skills import execute_answering, log_events
from tests.support.openai_server import OpenAIServer, Reply, tool_call

CHEMISTRY = FIXTURES / "skill_files" / "chemistry"
# What a model following the skill writes: its formula parser and weight table.
CODE = """import re
WEIGHTS = {"H": 1.008, "C": 12.011, "N": 14.007, "O": 15.999, "S": 32.06}
formula = "C9H8O4"  # aspirin
counts = re.findall(r"([A-Z][a-z]?)(\\d*)", formula)
mw = round(sum(WEIGHTS[element] * int(n or 1) for element, n in counts), 2)
print(mw)"""


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    sandbox_or_skip()


def answer_from_the_run(body: dict[str, Any]) -> Reply:
    """The scripted model's answer, made of what its `python` call returned: the number
    reaches the person only if it reached the model."""
    ran = str(body["messages"][-1]["content"])
    number = re.fullmatch(r"\[ran\]\n(\d+\.\d+)", ran.strip())
    if number is None:
        return Reply(text=f"I could not compute it: {ran}")
    return Reply(text=f"The molecular weight of aspirin (C9H8O4) is {number[1]} g/mol.")


def files_outside(root: Path, workspace: Path) -> dict[str, tuple[int, int]]:
    """Every file under `root` but not in `workspace`, with its size and mtime."""
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")
            if p.is_file() and workspace not in p.parents}


def sandboxed_kernels(workspace: Path) -> list[str]:
    """The command lines of bubblewrap processes binding `workspace` with no network."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0") if entry.name.isdigit() else []
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in argv]
        if words and Path(words[0]).name == "bwrap" and "--unshare-net" in words \
                and str(workspace) in words:
            found.append(" ".join(words))
    return found


def test_what_is_the_molecular_weight_of_aspirin(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = tmp_path / "home"
    shutil.copytree(CHEMISTRY, home / ".lily" / "skills" / "chemistry")
    # Aspirin, C9H8O4, with the skill's weights; the literature gives 180.16 g/mol.
    expected = round(9 * 12.011 + 8 * 1.008 + 4 * 15.999, 2)
    assert abs(expected - 180.16) < 0.01
    server = OpenAIServer(default=answer_from_the_run)  # serves once entered, below
    server.script(Reply(tool_calls=[tool_call("load_skill", {"name": "chemistry"})]),
                  Reply(tool_calls=[tool_call("python", {"code": CODE}, "p0")]))
    settings = {"LILY_MODEL": "openai/chemistry", "LILY_API_BASE": server.base_url,
                "OPENAI_API_KEY": "sk-zq81vw4kf-not-a-key", "LILY_STREAM": "0",
                "LILY_EVENT_LOG": "1", "LILY_RETRY_BACKOFF": "0.01"}
    with server, lily_kernel(workspace, home, **settings) as kernel:
        before = files_outside(tmp_path, workspace)
        run, prompts = execute_answering(kernel, "what is the molecular weight of aspirin?",
                                         ["y"])
        assert run.status == "ok", run.reply
        in_bubblewrap = sandboxed_kernels(workspace)
        person = kernel.execute("/python print(mw)", allow_stdin=True)  # would hang if asked
        assert person.status == "ok", person.reply
        status = kernel.execute("/python")
        after = files_outside(tmp_path, workspace)
        approvals = log_events(kernel, "approval")
        loaded = log_events(kernel, "skill_loaded")
        runs = log_events(kernel, "code_run")
        kernel.km.shutdown_kernel(now=False)  # as JupyterLab's shut down: Lily cleans up

    # Asked once, the code shown whole, in the sandbox.
    [question] = prompts
    assert question.startswith("Sandboxed Python (network only to hosts you allow; only the "
                               "workspace is writable)")
    assert "".join(f"\n  | {line}" for line in CODE.splitlines()) in question
    assert [(a["tool"], a["outcome"]) for a in approvals] == [("python", "approved")]
    assert in_bubblewrap, "the subkernel runs inside bubblewrap, without network"
    # The cell: the skill chosen, the code highlighted, what it printed, the answer.
    assert "Skill: chemistry (selected by the model)" in run.plain
    assert {"text/markdown": f"```python\n{CODE}\n```", "text/plain": CODE} in run.displays
    printed = "".join(m["text"] for m in run.of_type("stream") if m["name"] == "stdout")
    assert printed == f"{expected}\n"
    assert f"is {expected} g/mol." in run.displays[-1]["text/plain"]
    # The model read the skill, then the number.
    skill_result, ran = (str(r["messages"][-1]["content"]) for r in server.requests[1:3])
    assert "Compute, do not recall" in skill_result
    assert ran == f"[ran]\n{expected}"
    assert [e["name"] for e in loaded] == ["chemistry"]
    assert [(r["tool"], r["caller"], r["code"], r["status"]) for r in runs] == [
        ("python", "model", CODE, "ok"), ("python", "owner", "print(mw)", "ok")]
    # The person's /python sees the model's variables.
    assert [m["text"] for m in person.of_type("stream")] == [f"{expected}\n"]
    assert "mw" in status.plain and "formula" in status.plain
    # Nothing written outside the workspace; in it, once the kernel is shut down, nothing
    # but Lily's own session log (the sandbox's mount points are gone).
    assert after == before
    assert [p.name for p in workspace.iterdir()] == [".lily"]
