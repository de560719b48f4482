"""What the person sees of a run, through a real Lily kernel (jupyter_client over ZeroMQ),
the loopback model scripting its calls, real bubblewrap: a shell command, then its stdout
and stderr as stream messages in order, capped, then its exit status; the files a run
wrote named with their size and an image shown, and named in the model's result too; a
refusal of the sandbox said to the model in one line; `git commit` in the workspace's
repository while its hooks and config stay unwritable; an MCP tool's arguments and
return value shown under its notice."""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.core.test_run_view import _png
from tests.core.test_scripts import sandbox_or_skip
from tests.kernel.conftest import Execution, lily_kernel
from tests.support.openai_server import OpenAIServer, Reply, tool_call

FIXTURE = Path(__file__).resolve().parents[1] / "support" / "mcp_fixture_server.py"
SECRET = "sk-kernel-see-SECRET-1234567890"


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    sandbox_or_skip()


def start(server: OpenAIServer, workspace: Path, tools: str = "[read, list, shell]") -> Any:
    """A kernel whose (trusted) lily.yaml lets the model run `tools` without asking."""
    workspace.mkdir(parents=True, exist_ok=True)
    lily_yaml = workspace / "lily.yaml"
    lily_yaml.write_text(f"tools:\n  allow: {tools}\n" + (
        lily_yaml.read_text() if lily_yaml.exists() else ""))
    settings = {"LILY_MODEL": "openai/kernel-see", "LILY_API_BASE": server.base_url,
                "OPENAI_API_KEY": SECRET, "LILY_STREAM": "0", "LILY_RETRY_BACKOFF": "0.01"}
    return lily_kernel(workspace, workspace.parent / "home", **settings)


def script(server: OpenAIServer, *calls: tuple[str, dict[str, Any]]) -> None:
    server.replies.clear()
    server.requests.clear()
    server.script(*(Reply(tool_calls=[tool_call(name, args, f"c{i}")])
                    for i, (name, args) in enumerate(calls)), Reply(text="Done."))


def results(server: OpenAIServer) -> list[str]:
    """What the model read of each call, in order."""
    return [str(r["messages"][-1]["content"]) for r in server.requests[1:]]


def streams(run: Execution) -> list[tuple[str, str]]:
    return [(c["name"], c["text"]) for c in run.of_type("stream")]


def test_a_shell_run_shows_its_command_output_and_exit_status(server: OpenAIServer,
                                                              tmp_path: Path) -> None:
    with start(server, tmp_path / "workspace") as kernel:
        command = ("echo out1; sleep 0.3; echo err1 >&2; sleep 0.3; echo out2; "
                   "head -c 200000 /dev/zero | tr '\\0' y; exit 3")
        script(server, ("shell", {"command": command}))
        run = kernel.execute("Run it", allow_stdin=True)
        assert run.status == "ok", run.reply
        shown = streams(run)
        assert shown[:2] == [("stdout", "out1\n"), ("stderr", "err1\n")]
        assert shown[2][0] == "stdout" and shown[2][1].startswith("out2\n")
        printed = "".join(t for n, t in shown if n == "stdout")
        assert 60_000 < printed.count("y") < 200_000  # capped, as the model's is
        assert shown[-1] == ("stderr", "\n[... output cut here: 200,015 bytes in all]\n")
        code, ended, answer = run.displays
        assert code["text/plain"] == command and code["text/markdown"].startswith("```sh\n")
        assert ended["text/plain"].startswith('Shell "echo out1;') \
            and ended["text/plain"].endswith(": exit code 3 (sandboxed)")
        assert answer["text/plain"].startswith("Done.")
        # The order of the messages: the command, its output, how it ended, the answer.
        kinds = [m["msg_type"] for m in run.outputs]
        assert kinds[0] == "display_data" and kinds[-2:] == ["display_data"] * 2
        assert set(kinds[1:-2]) == {"stream"}


def test_the_files_a_run_wrote_are_listed_an_image_shown_and_the_model_told(
        server: OpenAIServer, tmp_path: Path) -> None:
    image = base64.b64encode(_png(3, 3)).decode()
    with start(server, tmp_path / "workspace") as kernel:
        script(server, ("shell", {"command": f"echo {image} | base64 -d > plot.png; "
                                             "printf 'a,b\\n' > table.csv"}),
               ("shell", {"command": "echo 'x: 1' > lily.yaml"}),
               ("shell", {"command": "frobnicate-xyz"}))
        run = kernel.execute("Plot it", allow_stdin=True)
        assert run.status == "ok", run.reply
        size = (kernel.workspace / "plot.png").stat().st_size
        assert f"Files written: `plot.png` ({size} bytes, new), `table.csv` (4 bytes, new)." \
            in run.plain
        [picture] = [d for d in run.displays if "image/png" in d]
        assert picture["image/png"] == image
        wrote, protected, missing = results(server)
        assert wrote.endswith(f"[files written in the workspace: plot.png ({size} bytes, "
                              "new), table.csv (4 bytes, new)]")
        assert protected.splitlines()[-1].startswith(
            "[refused by the sandbox: lily.yaml is protected, read-only there")
        assert missing.splitlines()[-1].startswith(
            "[refused by the sandbox: 'frobnicate-xyz' is not installed here")


def test_python_runs_name_the_files_they_wrote(server: OpenAIServer, tmp_path: Path) -> None:
    with start(server, tmp_path / "workspace", "[read, list, python]") as kernel:
        script(server, ("python", {"code": "open('out.txt', 'w').write('hello')"}))
        run = kernel.execute("Write it", allow_stdin=True)
        assert run.status == "ok", run.reply
        assert "Files written: `out.txt` (5 bytes, new)." in run.plain
        assert results(server)[0].endswith(
            "[files written in the workspace: out.txt (5 bytes, new)]")


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_commit_works_and_hooks_and_config_stay_unwritable(server: OpenAIServer,
                                                           tmp_path: Path) -> None:
    workspace = (tmp_path / "workspace").resolve()
    workspace.mkdir()
    identity = ["-c", "user.name=Ada", "-c", "user.email=ada@example.org"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(workspace)], check=True)
    (workspace / "notes.md").write_text("first\n")
    config = (workspace / ".git" / "config").read_text()
    with start(server, workspace) as kernel:
        script(server, ("shell", {"command": "git add notes.md lily.yaml && git -c "
                                             "user.name=Ada -c user.email=a@b commit -qm "
                                             "'add notes' && git log --format=%s"}),
               ("shell", {"command": "echo 'touch pwned' > .git/hooks/post-commit; "
                                     "git config core.fsmonitor 'touch pwned'"}))
        run = kernel.execute("Commit this", allow_stdin=True)
        assert run.status == "ok", run.reply
        committed, refused = results(server)
        assert committed.startswith("[exit code 0]\nadd notes\n")
        assert "[refused by the sandbox: .git/hooks/post-commit is protected" in refused
    assert not (workspace / ".git" / "hooks" / "post-commit").exists()
    assert (workspace / ".git" / "config").read_text() == config
    log = subprocess.run(["git", "-C", str(workspace), *identity, "log", "--format=%s"],
                         check=True, capture_output=True, text=True).stdout
    assert log == "add notes\n"


def test_an_mcp_tools_return_value_is_shown(server: OpenAIServer, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "lily.yaml").write_text(
        f"mcp_servers:\n  fx:\n    command: {sys.executable}\n    args: [\"{FIXTURE}\", "
        f"\"--marker\", \"{tmp_path / 'marker.txt'}\"]\n")
    with start(server, workspace, "[read, list, mcp__fx__add, mcp__fx__echo]") as kernel:
        script(server, ("mcp__fx__add", {"a": 2, "b": 40}),
               ("mcp__fx__echo", {"text": "\n".join(f"line {i}" for i in range(20))}))
        run = kernel.execute("Add them", allow_stdin=True)
        assert run.status == "ok", run.reply
        plain = run.plain
        assert "Tool mcp__fx__add: ran" in plain
        assert 'Called with `{"a": 2, "b": 40}`, returned:\n\n42' in plain
        [long] = [d for d in run.displays if "line 19" in d.get("text/html", "")]
        html = long["text/html"]
        # A few lines shown, the rest collapsed.
        assert "<pre>line 0\nline 1" in html and "line 5</pre>" in html
        assert "<details><summary>… 14 more lines</summary><pre>line 6\n" in html
