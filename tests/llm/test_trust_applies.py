"""Trust applies everything it names at the next run, as a person meets it (issue 37,
item 1): a real Lily kernel over ZeroMQ, the loopback model, a real IPython subkernel in
real bubblewrap. The lily.yaml of a downloaded folder names a model and a Python kernel;
the person trusts it in the session's first chat cell (the configured model answers, and
the cell does not say the embedded model does), and later, once a kernel runs: the next
run is in the kernel the file names, with no restart of Lily, and one line says so."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lily_kernel.execution.sandbox import find_sandbox
from tests.kernel.conftest import Execution, LilyProcess, lily_kernel
from tests.llm.test_kernel_skills import execute_answering
from tests.support.openai_server import OpenAIServer, Reply

pytestmark = pytest.mark.skipif(
    not find_sandbox(os.environ).available and os.environ.get("CI") != "true",
    reason=f"no working bubblewrap here ({find_sandbox(os.environ).reason})")


def _kernelspec(root: Path) -> Path:
    """A Jupyter data folder with one Python kernelspec, `ds`, that marks its kernel."""
    spec = root / "jupyter" / "kernels" / "ds"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python (data science)", "language": "python",
        "env": {"KERNEL_MARK": "the ds kernel"}}))
    return root / "jupyter"


@contextmanager
def _downloaded(server: OpenAIServer, root: Path, *, model: bool) -> Iterator[LilyProcess]:
    workspace = root / "workspace"
    workspace.mkdir()
    lines = ["python_kernel: ds"]
    if model:
        lines += ["model: openai/the-configured-one", f"api_base: {server.base_url}"]
    (workspace / "lily.yaml").write_text("\n".join(lines) + "\n")
    env = {"LILY_TRUST": "", "OPENAI_API_KEY": "sk-trust-not-a-key", "LILY_STREAM": "0",
           "LILY_RETRY_BACKOFF": "0.01", "JUPYTER_PATH": str(_kernelspec(root))}
    if not model:
        env.update(LILY_MODEL="openai/person", LILY_API_BASE=server.base_url)
    with lily_kernel(workspace, root / "home", **env) as kernel:
        yield kernel


def _stdout(run: Execution) -> str:
    return "".join(c["text"] for c in run.of_type("stream") if c["name"] == "stdout")


MARK = "import os; print(os.environ.get('KERNEL_MARK', 'Lily'))"


def test_trust_in_the_first_chat_cell_answers_with_the_configured_model_and_says_so(
        server: OpenAIServer, tmp_path: Path) -> None:
    server.replies.clear()
    server.script(Reply(text="From the configured model."))
    with _downloaded(server, tmp_path, model=True) as kernel:
        run, [question] = execute_answering(kernel, "Hello", ["y"], timeout=120)
        assert run.status == "ok", run.reply
        assert "model: openai/the-configured-one" in question
        assert server.requests[-1]["model"] == "the-configured-one"
        assert "From the configured model." in run.plain
        assert "embedded model" not in run.plain  # it did not answer
        [changed] = [line for line in run.plain.splitlines() if line.startswith("Trusted")]
        assert "now: model openai/the-configured-one" in changed, changed
        assert "Python kernel Python (data science) (ds) from the next run" in changed


def test_a_trusted_python_kernel_runs_the_next_run_without_a_restart(
        server: OpenAIServer, tmp_path: Path) -> None:
    with _downloaded(server, tmp_path, model=False) as kernel:
        before = kernel.execute(f"/python {MARK}", timeout=180)
        assert _stdout(before) == "Lily\n", before.outputs  # held: Lily's own kernel
        run, [question] = execute_answering(kernel, "/trust", ["y"], timeout=120)
        assert "python_kernel: ds" in question
        assert "Python kernel Python (data science) (ds) from the next run (a new " \
               "kernel: the variables of the running one are gone)" in run.plain
        after = kernel.execute(f"/python {MARK}", timeout=180)
        assert _stdout(after) == "the ds kernel\n", after.outputs
