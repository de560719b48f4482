"""Who lets the model's Python run, through a real Lily kernel (jupyter_client over
ZeroMQ), the loopback model scripting `python` calls and a real subkernel in real
bubblewrap: asked by default (yes, no, `a`, no one to answer) and the kernel's memory
limit (a trusted and an untrusted lily.yaml allowing it: test_kernel_shell.py, for both
tools)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.core.test_scripts import sandbox_or_skip
from tests.llm.test_kernel_shell import script_call, start, tool_result  # the same kernel
from tests.llm.test_kernel_skills import execute_answering, log_events
from tests.support.openai_server import OpenAIServer


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    sandbox_or_skip()


def script(server: OpenAIServer, code: str) -> None:
    script_call(server, "python", code)


def printed(run: Any) -> str:
    return "".join(m["text"] for m in run.of_type("stream"))


def test_asked_by_default_yes_no_always_and_no_one_to_answer(server: OpenAIServer,
                                                              tmp_path: Path) -> None:
    with start(server, tmp_path) as kernel:
        script(server, "open('yes.txt', 'w').write('yes')\nprint('wrote')")
        run, prompts = execute_answering(kernel, "Write yes", ["y"])
        assert run.status == "ok", run.reply
        assert prompts[0].startswith("Sandboxed Python (network only to hosts you allow; only the workspace is "
                                     "writable), in the kernel ")
        assert "\n  | open('yes.txt', 'w').write('yes')\n  | print('wrote')\n" in prompts[0]
        assert prompts[0].endswith("Run it? [y/N/a] ")
        assert "wrote" in tool_result(server)
        script(server, "open('no.txt', 'w')")
        execute_answering(kernel, "Touch no", ["n"])
        assert tool_result(server).startswith("Refused: the person declined")
        script(server, "open('unattended.txt', 'w')")
        unattended = kernel.execute("Touch it", allow_stdin=False)
        assert unattended.status == "ok" and "asked by default" in tool_result(server)
        script(server, "print(6 * 7)")
        execute_answering(kernel, "Multiply", ["a"])
        assert "42" in tool_result(server)
        script(server, "open('later.txt', 'w')")
        later = kernel.execute("Touch later", allow_stdin=True)  # would hang if it asked
        assert later.status == "ok" and (kernel.workspace / "later.txt").exists()
        assert (kernel.workspace / "yes.txt").read_text() == "yes"
        assert not (kernel.workspace / "no.txt").exists()
        assert not (kernel.workspace / "unattended.txt").exists()
        assert [a["outcome"] for a in log_events(kernel, "approval")] == [
            "approved", "declined", "unanswerable", "always"]
        # The person's own /python is never asked: they typed it.
        mine = kernel.execute("/python print(open('yes.txt').read())", allow_stdin=True)
        assert mine.status == "ok" and "yes" in printed(mine)


def test_the_kernel_runs_under_the_memory_limit(server: OpenAIServer, tmp_path: Path) -> None:
    with start(server, tmp_path, LILY_MEMORY_LIMIT_MB="2048") as kernel:
        run = kernel.execute("/python import resource\n"
                             "print(resource.getrlimit(resource.RLIMIT_DATA))")
        assert run.status == "ok", run.reply
        assert f"({2048 * 1024 * 1024}, {2048 * 1024 * 1024})" in printed(run)
        big = kernel.execute("/python x = bytearray(3 * 1024 ** 3)")
        assert "MemoryError" in printed(big)
        after = kernel.execute("/python print('still here', len(str(resource)))")
        assert "still here" in printed(after)  # the namespace outlived the refusal
