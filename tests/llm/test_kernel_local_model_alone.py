"""The embedded model in kernels of their own: a broken model file, and the model's code
run (issue 37's "Done when"). Nothing configured, no key, no network.

These run the real SmolLM2-135M GGUF with llama.cpp (setup.sh installs the `local`
extra); they skip only where the extra is not installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kernel.conftest import lily_kernel
from tests.support.embedded import (
    ANSWER_SECONDS,
    EMBEDDED,
    GUARD,
    NEEDS_THE_MODEL,
    answer,
    session_events,
)

pytestmark = [NEEDS_THE_MODEL, pytest.mark.slow]  # the real model in a kernel: minutes under load


@pytest.mark.parametrize(("make", "expected"), [
    (lambda p: p.write_bytes(b"not a model at all" * 100), "is not a GGUF model file"),
    (lambda p: p.write_bytes(EMBEDDED.read_bytes()[: 2 << 20]) if EMBEDDED else None,
     "could not be loaded"),
    (lambda p: None, "does not exist"),
], ids=["garbage", "truncated", "missing"])
def test_a_broken_gguf_file_is_a_clear_error(tmp_path: Path, make, expected: str) -> None:  # type: ignore[no-untyped-def]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    model = tmp_path / "model.gguf"
    make(model)
    with lily_kernel(workspace, tmp_path / "home", LILY_MODEL=f"local/{model}") as kernel:
        run = kernel.execute("hello", timeout=ANSWER_SECONDS)
        assert run.status == "error" and run.reply["ename"] == "ModelError", run.reply
        assert run.reply["evalue"].startswith("Error: the local model could not be loaded")
        assert expected in run.reply["evalue"]
        assert run.reply["traceback"] == [run.reply["evalue"]]
        assert kernel.execute("/skills").status == "ok"  # the kernel is alive



def test_the_offline_model_gets_391_from_code_it_saw_run(tmp_path: Path) -> None:
    """Issue 37's "Done when": asked "what is 17 * 23?", the embedded model (which cannot
    call tools) writes a python block; under full auto it runs in the sandboxed kernel,
    the person sees the code and 391, and the answer, from that output, says 391 (the
    model alone said 340)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    network_log = tmp_path / "attempts.log"
    with lily_kernel(workspace, tmp_path / "home", LILY_EVENT_LOG="1", PYTHONPATH=GUARD,
                     LILY_TEST_NETWORK_LOG=str(network_log), LILY_MAX_TOKENS="256",
                     LILY_POLICY="auto") as kernel:
        run = kernel.execute("what is 17 * 23?", timeout=ANSWER_SECONDS)
        ran = [e["data"] for e in session_events(kernel) if e["event"] == "code_run"]
    assert run.status == "ok", run.reply
    code = [d["text/markdown"] for d in run.displays
            if d.get("text/markdown", "").startswith("```python")]
    assert len(code) == 1 and "17" in code[0] and "23" in code[0]  # shown where it ran
    shown_code = next(i for i, d in enumerate(run.displays)
                      if d.get("text/markdown", "").startswith("```python"))
    replies = [i for i, d in enumerate(run.displays) if "lily-reply" in d.get("text/html", "")]
    assert replies and replies[-1] > shown_code  # the answer under the code it came from
    assert "391" in "".join(c["text"] for c in run.of_type("stream") if c["name"] == "stdout")
    assert [(r["caller"], r["status"]) for r in ran] == [("model", "ok")]
    assert "391" in answer(run)["text/plain"]
    assert not network_log.exists(), network_log.read_text()
