"""A real Lily kernel over jupyter_client: outputs, errors, completion, inspection, info."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from lily_kernel import __version__
from lily_kernel.display.messages import NO_MODEL_MESSAGE
from tests.kernel.conftest import HOSTILE, LilyProcess, lily_kernel

MIMETYPES = {"text/html", "text/markdown", "text/plain"}


def test_skills_is_one_display_in_three_formats_with_a_row_per_skill(
    shared_kernel: LilyProcess,
) -> None:
    run = shared_kernel.execute("/skills")
    assert run.status == "ok"
    assert [m["msg_type"] for m in run.outputs] == ["display_data"]
    (data,) = run.displays
    assert set(data) == MIMETYPES
    html = data["text/html"]
    for name, source, alias in [("echo", "bundled", ""), ("greeter", "workspace", "/hi"),
                                ("workspace-files", "bundled", "/ls")]:
        assert f'<td style="text-align:left">{name}</td>' in html
        assert f"| {name.replace('_', chr(92) + '_')} |" in data["text/markdown"]
        line = next(li for li in data["text/plain"].splitlines() if li.startswith(name + " "))
        assert source in line and alias in line
    # The excluded skill and its reason sit in a collapsed section, not in the table.
    table, excluded = html.split("<details>")
    assert "broken" not in table
    assert "<summary>Excluded (1)</summary>" in excluded and "invalid YAML" in excluded
    assert "Skills: 5 available (snapshot 1" in data["text/plain"]


def test_a_hostile_summary_is_escaped_in_html_and_markdown(shared_kernel: LilyProcess) -> None:
    for code in ("/skills", "/help hostile"):
        data = shared_kernel.execute(code).displays[0]
        assert "<img" not in data["text/html"]
        assert "&lt;img src=x onerror=alert(1)&gt;" in data["text/html"]
        assert "<img" not in data["text/markdown"]
        assert HOSTILE in data["text/plain"]


ERRORS = [
    ("/foo", "Error: unknown command /foo."),
    ("/", "Error: empty command; type /help for the list of commands."),
    ("/skill", "Error: /skill requires a skill name."),
    ("/skill nope", "Error: no skill named 'nope' in this session (snapshot 1)."),
    ("/Skills", "Error: unknown command /Skills."),
    ("/help nope", "Error: no skill named 'nope' in this session (snapshot 1)."),
    ("/agent nope", "Error: no agent named 'nope'; available: critic, default."),
    ("/reload_skills now", "Error: /reload_skills takes no argument."),
    ("/ls ..", "Error: /ls (list): '..' uses '..'; paths must stay inside the workspace."),
    ("/ls nothere", "Error: /ls (list): no folder 'nothere' in the workspace."),
]


@pytest.mark.parametrize(("code", "message"), ERRORS)
def test_every_command_error_is_an_error_reply_without_python_traceback(
    shared_kernel: LilyProcess, code: str, message: str,
) -> None:
    run = shared_kernel.execute(code)
    assert run.status == "error"
    assert (run.reply["ename"], run.reply["evalue"]) == ("CommandError", message)
    assert run.reply["traceback"] == [message]
    assert [m["msg_type"] for m in run.outputs] == ["error"]
    assert run.of_type("error")[0] == {"ename": "CommandError", "evalue": message,
                                       "traceback": [message]}


def test_an_excluded_skill_error_names_its_reason(shared_kernel: LilyProcess) -> None:
    run = shared_kernel.execute("/skill broken")
    assert run.status == "error"
    assert run.reply["evalue"].startswith(
        "Error: skill 'broken' is not available in this session (snapshot 1): malformed: "
        "invalid YAML")


def test_failed_commands_change_nothing(shared_kernel: LilyProcess) -> None:
    for code in ("/agent nope", "/reload_skills now", "/skill nope"):
        assert shared_kernel.execute(code).status == "error"
    assert "snapshot 1," in shared_kernel.execute("/skills").plain
    assert shared_kernel.execute("/agent").plain.startswith("Agent: default")


@pytest.mark.parametrize("code", ["hello Lily", "/hi there", "  \n  what now?"])
def test_a_chat_cell_without_a_model_says_how_to_configure_one(
    shared_kernel: LilyProcess, code: str,
) -> None:
    run = shared_kernel.execute(code)
    assert run.status == "error"
    assert run.reply["ename"] == "ModelNotConfiguredError"
    assert run.reply["evalue"] == f"Error: {NO_MODEL_MESSAGE}"
    assert "LILY_MODEL" in run.reply["traceback"][0]


def test_tool_dispatch_alias_lists_the_workspace(shared_kernel: LilyProcess) -> None:
    run = shared_kernel.execute("/ls")
    assert run.status == "ok"
    (data,) = run.displays
    assert set(data) == MIMETYPES
    assert "notes.txt" in data["text/plain"] and "skills/" in data["text/plain"]
    assert "<pre>" in data["text/html"]


def test_silent_execution_publishes_nothing(shared_kernel: LilyProcess) -> None:
    ok = shared_kernel.execute("/skills", silent=True)
    assert ok.status == "ok" and ok.outputs == []
    failed = shared_kernel.execute("/foo", silent=True)
    assert failed.status == "error" and failed.outputs == []
    assert failed.reply["evalue"] == "Error: unknown command /foo."


def test_kernel_info_describes_lily_and_has_no_debugger(shared_kernel: LilyProcess) -> None:
    info = shared_kernel.request("kernel_info")
    assert info["implementation"] == "lily"
    assert info["implementation_version"] == __version__
    assert info["language_info"] == {
        "name": "lily", "version": __version__, "mimetype": "text/markdown",
        "file_extension": ".md", "codemirror_mode": "markdown", "pygments_lexer": "markdown",
    }
    assert info["supported_features"] == []  # neither debugger nor kernel subshells
    assert "/help" in info["banner"]
    assert "notebook" not in info["banner"]  # `jupyter console` shows it too
    assert info["help_links"] and all(link["url"].startswith("https://")
                                      for link in info["help_links"])


@pytest.mark.parametrize(("code", "cursor", "matches", "start"), [
    ("/sk", None, ["/skill", "/skills"], 0),
    ("/", None, ["/agent", "/echo", "/greeter", "/help", "/hi", "/hostile", "/ls", "/mcp",
                 "/network", "/new", "/plan", "/plan-compiler", "/policy", "/python", "/reload_skills", "/rerun",
                 "/resume", "/skill", "/skills", "/trust", "/workspace-files"],
     0),
    ("/skill g", None, ["greeter"], 7),
    ("/help ", None, ["echo", "greeter", "hostile", "plan-compiler", "workspace-files"], 6),
    ("/agent c", None, ["critic"], 7),
    ("/agent ", None, ["critic", "default"], 7),
    ("/policy a", None, ["ask", "auto"], 8),  # Tab completed nothing here
    ("/policy au", None, ["auto"], 8),
    ("/skills more", 3, ["/skill", "/skills"], 0),
    ("hello /sk", None, [], 9),
    ("/skill echo ", None, [], 12),
])
def test_completion_lists_commands_skills_and_agents(
    shared_kernel: LilyProcess, code: str, cursor: int | None, matches: list[str], start: int,
) -> None:
    reply = shared_kernel.request("complete", code, cursor)
    end = len(code) if cursor is None else cursor
    assert reply["status"] == "ok"
    assert (reply["matches"], reply["cursor_start"], reply["cursor_end"]) == (matches, start, end)


@pytest.mark.parametrize(("code", "cursor", "title"), [
    ("/help greeter", None, "Skill greeter"),
    ("/skill hostile now", 10, "Skill hostile"),
    ("/hi", None, "Skill greeter"),
])
def test_inspection_shows_the_skill_help(
    shared_kernel: LilyProcess, code: str, cursor: int | None, title: str,
) -> None:
    reply = shared_kernel.request("inspect", code, cursor)
    assert reply["status"] == "ok" and reply["found"] is True
    assert set(reply["data"]) == MIMETYPES
    assert reply["data"]["text/plain"].startswith(title)
    assert "source" in reply["data"]["text/plain"]
    assert "<img" not in reply["data"]["text/html"]


def test_inspection_of_other_text_finds_nothing(shared_kernel: LilyProcess) -> None:
    reply = shared_kernel.request("inspect", "hello there", 3)
    assert (reply["status"], reply["found"], reply["data"]) == ("ok", False, {})


@pytest.mark.parametrize("code", ["/skills", "hello", "/skill echo\nmore lines", "", "/("])
def test_every_cell_is_complete(shared_kernel: LilyProcess, code: str) -> None:
    assert shared_kernel.request("is_complete", code) == {"status": "complete"}


def test_history_answers_tail_range_and_search(shared_kernel: LilyProcess) -> None:
    cells = ["/help echo", "/skills", "/help echo"]
    counts = [shared_kernel.execute(c).reply["execution_count"] for c in cells]
    tail = shared_kernel.request("history", hist_access_type="tail", n=3, raw=True,
                                 output=False)["history"]
    assert tail == [[1, n, c] for n, c in zip(counts, cells, strict=True)]
    ranged = shared_kernel.request("history", hist_access_type="range", session=0,
                                   start=counts[1], stop=counts[2], raw=True,
                                   output=False)["history"]
    assert ranged == [[1, counts[1], "/skills"]]
    found = shared_kernel.request("history", hist_access_type="search", pattern="/help*",
                                  unique=True, raw=True, output=False)["history"]
    assert found[-1] == [1, counts[2], "/help echo"]
    assert [h[2] for h in found].count("/help echo") == 1
    with_output = shared_kernel.request("history", hist_access_type="tail", n=1, raw=True,
                                        output=True)["history"]
    assert with_output == [[1, counts[2], ["/help echo", None]]]


def test_an_error_aborts_the_cells_queued_behind_it(shared_kernel: LilyProcess) -> None:
    """What "Run All" relies on: requests queued after a failing cell are aborted."""
    # Both requests are in the kernel's queue before it runs the first (as Run All sends
    # them): the kernel is paused while they are sent, never raced on a loaded machine.
    pid = shared_kernel.km.provisioner.pid  # type: ignore[union-attr]
    os.kill(pid, signal.SIGSTOP)
    try:
        failing = shared_kernel.kc.execute("/foo")
        queued = shared_kernel.kc.execute("/skills")
    finally:
        os.kill(pid, signal.SIGCONT)
    replies = {msg_id: shared_kernel.reply_to(msg_id)["content"]["status"]
               for msg_id in (failing, queued)}
    assert replies == {failing: "error", queued: "aborted"}
    shared_kernel.drain_iopub()
    assert shared_kernel.execute("/skills").status == "ok"  # the queue works again


def test_a_subshell_cannot_be_created(shared_kernel: LilyProcess) -> None:
    """ipykernel 7 would run cells of other subshells in threads at once; Lily's session
    is not made for that, so it neither advertises nor grants one (bug: it advertised)."""
    kc = shared_kernel.kc
    msg = kc.session.msg("create_subshell_request", {})
    kc.control_channel.send(msg)
    reply = kc.control_channel.get_msg(timeout=30)
    assert reply["parent_header"]["msg_id"] == msg["header"]["msg_id"]
    assert reply["content"]["status"] == "error"
    assert "does not support kernel subshells" in reply["content"]["evalue"]
    assert shared_kernel.execute("/skills").status == "ok"


def test_a_cell_kept_out_of_history_does_not_move_the_count(tmp_path: Path) -> None:
    with lily_kernel(tmp_path, tmp_path / "home") as kernel:
        first = kernel.execute("/help")
        quiet = kernel.execute("/help", store_history=False)
        after = kernel.execute("/help")
    counts = [first.reply["execution_count"], quiet.reply["execution_count"],
              after.reply["execution_count"]]
    assert counts == [1, 1, 2]


@pytest.mark.parametrize("cursor", [999, -5])
def test_completion_clamps_a_cursor_outside_the_code(shared_kernel: LilyProcess,
                                                     cursor: int) -> None:
    reply = shared_kernel.request("complete", "/he", cursor)
    assert 0 <= reply["cursor_start"] <= reply["cursor_end"] <= len("/he")
    inspected = shared_kernel.request("inspect", "/skill greeter", cursor)
    assert inspected["status"] == "ok"


def test_a_notice_shows_escape_codes_in_its_plain_text() -> None:
    """A notice names the workspace (`run lily trust <folder>`), a persona file or a
    skill, all the download's: `jupyter console` prints the plain text, which must not
    retitle the terminal (OSC 0) or erase a line."""
    from lily_kernel.display import Notice, bundle

    data = bundle(Notice("run `lily trust /dl\x1b]0;pwned\x07\x1b[2K` in a terminal\nthen"))
    assert data["text/plain"] == (
        "run `lily trust /dl\\x1b]0;pwned\\x07\\x1b[2K` in a terminal\nthen")
