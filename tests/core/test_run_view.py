"""What the person sees of a run, and what the model reads of it besides its output
(tools/run_view.py), through the real gate and real bubblewrap: a shell command shown,
its stdout and stderr streamed in order into the cell, capped, its exit status; the files
a run wrote named with their size (an image shown, made safe as any run's image), in the
cell and in the model's result; one line for what the sandbox refused (a protected path,
a missing command)."""

from __future__ import annotations

import asyncio
import base64
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lily_kernel.display import Code, Notice, RunOutput
from lily_kernel.display.runs import output_message
from lily_kernel.events import EventLog
from lily_kernel.execution.limits import Limits, RunSettings
from lily_kernel.execution.runner import KEPT_BYTES, ScriptHost
from lily_kernel.runtime.tool_gate import ToolGate
from lily_kernel.tools import Hosts, ToolContext, default_registry
from tests.core.test_scripts import sandbox_or_skip
from tests.support.shell_gate import shell_policy
from tests.support.sink import RecordingSink

ENVIRON = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    sandbox_or_skip()


@dataclass(frozen=True)
class Shown:
    """A shell call as the cell showed it and the model read it."""

    result: str
    values: list[Any]

    @property
    def streams(self) -> list[tuple[str, str]]:
        return [(v.output["name"], v.output["text"]) for v in self.values
                if isinstance(v, RunOutput) and v.output.get("output_type") == "stream"]

    @property
    def notices(self) -> list[str]:
        return [v.text for v in self.values if isinstance(v, Notice)]

    def text(self, name: str) -> str:
        return "".join(t for n, t in self.streams if n == name)


def shell(command: str, workspace: Path, environ: Mapping[str, str] = ENVIRON) -> Shown:
    """`command` as the model's shell call (allowed), through the gate: what was shown
    (with the notice the gate leaves) and what the model read."""
    host = ScriptHost(environ, RunSettings(30, limits=Limits()))
    context = ToolContext(workspace, services=Hosts(host))
    gate = ToolGate(default_registry(), shell_policy(allow=("shell",)), context,
                    EventLog(None, "test"))
    sink = RecordingSink()
    text = asyncio.run(gate.model_call(sink, "shell", _json({"command": command}),
                                       offered=["shell"], step=0, skill=None, skills=None))
    return Shown(text, sink.values)


def _json(value: dict[str, Any]) -> str:
    import json

    return json.dumps(value)


def _png(width: int = 2, height: int = 2) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    rows = b"".join(b"\0" + b"\xff\0\0" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def test_the_command_then_its_output_in_order_then_how_it_ended(workspace: Path) -> None:
    # The pauses make three moments (a program printing over time), so each stream's
    # text is its own output in the order printed.
    run = shell("echo out1; sleep 0.3; echo err1 >&2; sleep 0.3; echo out2; exit 4", workspace)
    code = run.values[0]
    assert isinstance(code, Code) and code.language == "sh"
    assert code.text.startswith("echo out1; sleep 0.3")
    assert run.streams == [("stdout", "out1\n"), ("stderr", "err1\n"), ("stdout", "out2\n")]
    assert run.notices[-1] == 'Shell "echo out1; sleep 0.3; echo err1 >&2; sleep 0.3; ' \
        'echo out2; exit 4": exit code 4 (sandboxed)'
    assert isinstance(run.values[-1], Notice)  # after the output
    # The model reads stdout and stderr together, in the order they came.
    assert run.result == "[exit code 4]\nout1\nerr1\nout2\n"
    # stderr is the notebook's stderr stream (shown red), its text made safe.
    kind, content = output_message(next(v for v in run.values if isinstance(v, RunOutput)
                                        and v.output["name"] == "stderr"))
    assert (kind, content["name"]) == ("stream", "stderr")


def test_the_output_shown_is_capped_as_the_result_is(workspace: Path) -> None:
    run = shell("head -c 300000 /dev/zero | tr '\\0' x; echo; echo done >&2", workspace)
    shown = run.text("stdout") + run.text("stderr")
    assert run.text("stdout").count("x") <= KEPT_BYTES
    assert shown.rstrip().endswith("[... output cut here: 300,006 bytes in all]")
    assert "[... output truncated: 300,006 bytes in all]" in run.result


def test_the_files_a_run_wrote_are_named_and_an_image_shown(workspace: Path) -> None:
    (workspace / "kept.txt").write_text("unchanged")
    (workspace / "data.csv").write_text("a\n")
    image = base64.b64encode(_png()).decode()
    run = shell(f"printf 'a,b\\n1,2\\n' > data.csv; mkdir -p out; echo {image} | base64 -d "
                "> out/plot.png; echo hi > notes.md", workspace)
    png = (workspace / "out" / "plot.png").stat().st_size
    assert run.notices[-2] == (f"Files written: `data.csv` (8 bytes), `notes.md` (3 bytes, "
                               f"new), `out/plot.png` ({png} bytes, new).")
    [shown] = [v for v in run.values if isinstance(v, RunOutput)
               and v.output.get("output_type") == "display_data"]
    kind, content = output_message(shown)
    assert kind == "display_data" and content["data"]["image/png"] == image
    assert run.result.endswith(f"[files written in the workspace: data.csv (8 bytes), notes.md "
                               f"(3 bytes, new), out/plot.png ({png:,} bytes, new)]")
    assert "kept.txt" not in run.result


def test_an_image_is_shown_only_as_an_image(workspace: Path) -> None:
    svg = "<svg xmlns='http://www.w3.org/2000/svg' onload='alert(1)'><script>alert(2)</script></svg>"
    run = shell(f'printf "%s" "{svg}" > chart.svg; printf "<script>x</script>" > fake.png',
                workspace)
    images = [output_message(v)[1]["data"] for v in run.values if isinstance(v, RunOutput)
              and v.output.get("output_type") == "display_data"]
    [svg_shown, fake] = images
    assert svg_shown["text/html"].startswith('<img src="data:image/svg+xml;base64,')
    assert "<script" not in svg_shown["text/html"] and "onload" not in svg_shown["text/html"]
    # A file named .png is shown as PNG bytes (base64), never as markup.
    assert set(fake) == {"image/png", "text/plain"}
    assert base64.b64decode(fake["image/png"]) == b"<script>x</script>"


def test_a_write_to_a_protected_path_is_said_in_one_line(workspace: Path) -> None:
    (workspace / "lily.yaml").write_text("tools: {}\n")
    run = shell("echo 'policy: auto' > lily.yaml", workspace)
    assert run.result.splitlines()[-1] == (
        "[refused by the sandbox: lily.yaml is protected, read-only there (docs: Protected "
        "paths); write somewhere else in the workspace, or ask the person to change it]")


def test_a_missing_command_is_said_in_one_line(workspace: Path) -> None:
    run = shell("frobnicate-xyz --all", workspace)
    assert run.result.startswith("[exit code 127]\n")
    assert run.result.splitlines()[-1] == (
        "[refused by the sandbox: 'frobnicate-xyz' is not installed here or not on the "
        "sandbox's PATH (exit code 127); use a command that is, or ask the person to "
        "install it]")


def test_a_command_that_fails_otherwise_has_no_such_line(workspace: Path) -> None:
    run = shell("echo 'no luck' >&2; exit 1", workspace)
    assert run.result == "[exit code 1]\nno luck\n"


def test_the_look_at_the_workspace_is_bounded_and_follows_no_link(tmp_path: Path) -> None:
    from lily_kernel.execution.written import take_snapshot, written_files

    workspace = tmp_path / "workspace"
    for folder in ("src", ".git/objects", "node_modules/x", "env", "src/__pycache__"):
        (workspace / folder).mkdir(parents=True)
    (workspace / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (workspace / "elsewhere").symlink_to(outside)
    for name in ("src/a.py", ".git/objects/o", "node_modules/x/i.js", "env/bin",
                 "src/__pycache__/a.pyc", "top.txt"):
        (workspace / name).write_text("x")
    before = take_snapshot(workspace)
    assert set(before.files) == {"src/a.py", "top.txt"} and before.complete
    (workspace / "src" / "a.py").write_text("changed")
    (workspace / "new.txt").write_text("new")
    (outside / "secret.txt").write_text("changed too")  # behind a link: not looked at
    after = take_snapshot(workspace)
    assert [(f.path, f.size, f.created) for f in written_files(before, after)] == [
        ("new.txt", 3, True), ("src/a.py", 7, False)]
    bounded = take_snapshot(workspace, limit=3)
    assert not bounded.complete and len(bounded.files) <= 3
