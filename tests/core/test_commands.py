"""Commands through the runtime: exact errors, no fallback, state untouched on failure."""

from __future__ import annotations

import asyncio
import copy
import re
import time
from pathlib import Path

import pytest

from lily_kernel.commands import CommandResult, SkillInvocation, parse_command
from lily_kernel.display import Table, render_html, render_markdown, render_plain
from lily_kernel.errors import CommandError, ModelNotConfiguredError
from lily_kernel.runtime import LilyRuntime
from tests.conftest import skill_text, write_skill
from tests.support.sink import RecordingSink


@pytest.fixture
def runtime(workspace: Path, environ: dict[str, str]) -> LilyRuntime:
    skills = workspace / "skills"
    write_skill(skills, "alpha", skill_text("First skill", command="a"))
    write_skill(skills, "lister", "---\nsummary: Lists files\ninvocation_mode: tool_dispatch\n"
                                  "command: ls\ncommand_tool: list\n---\n")
    write_skill(skills, "broken", "---\nsummary: [oops\n---\n")
    (workspace / "data.txt").write_text("12345")
    return LilyRuntime.start(workspace, environ)


def run(runtime: LilyRuntime, code: str) -> RecordingSink:
    sink = RecordingSink()
    asyncio.run(runtime.run_cell(code, sink))
    assert not (sink.streamed or sink.replies or sink.questions), \
        "a command neither streams, answers nor asks"
    return sink


def error_of(runtime: LilyRuntime, code: str) -> str:
    with pytest.raises(CommandError) as err:
        run(runtime, code)
    return str(err.value)


def state(runtime: LilyRuntime) -> object:
    s = runtime.session
    return copy.deepcopy((s.session_id, s.active_agent, s.persona, s.skill_snapshot,
                          s.model_config, s.conversation_state.messages))


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("/skill", "/skill requires a skill name."),
        ("/skill   ", "/skill requires a skill name."),
        ("/foo", "unknown command /foo."),
        ("/Skills", "unknown command /Skills."),
        ("/skils", "unknown command /skils."),
        ("/", "empty command; type /help for the list of commands."),
        ("/skill nope", "no skill named 'nope' in this session (snapshot 1)."),
        ("/help nope", "no skill named 'nope' in this session (snapshot 1)."),
        ("/reload_skills now", "/reload_skills takes no argument."),
        ("/agent ghost", "no agent named 'ghost'; available: default."),
        ("/ls ../..", "/ls (list): '../..' uses '..'; paths must stay inside the workspace."),
        ("/ls missing", "/ls (list): no folder 'missing' in the workspace."),
    ],
)
def test_command_errors_are_exact_and_change_nothing(
    runtime: LilyRuntime, code: str, message: str
) -> None:
    before = state(runtime)
    assert error_of(runtime, code) == message
    assert state(runtime) == before


def test_excluded_skill_says_why(runtime: LilyRuntime) -> None:
    message = error_of(runtime, "/skill broken")
    assert message.startswith("skill 'broken' is not available in this session "
                              "(snapshot 1): malformed: invalid YAML frontmatter")


def test_non_command_cells_go_to_the_model_path(runtime: LilyRuntime) -> None:
    with pytest.raises(ModelNotConfiguredError,
                       match=r"no model configured(.|\n)*install the local model(.|\n)*set LILY_MODEL"):
        run(runtime, "  hello /skills")


def test_skills_lists_snapshot_with_excluded_section(runtime: LilyRuntime) -> None:
    result = run(runtime, "   /skills").shown[0]
    plain = render_plain(result)
    assert re.search(r"^alpha\s+First skill\s+workspace\s+prompt_rewrite\s+/a$", plain, re.M)
    assert re.search(r"^broken\s+malformed\s+workspace\s+invalid YAML", plain, re.M)
    assert "Excluded (1)" in plain
    html = render_html(result)
    assert "<details><summary>Excluded (1)</summary>" in html
    assert "<td style=\"text-align:left\">/a</td>" in html


def test_skills_with_words_ranks_the_snapshot_with_scores(runtime: LilyRuntime) -> None:
    before = state(runtime)
    result = run(runtime, "/skills lists files please").shown[0]
    text = render_plain(result)
    assert result.title == 'Skills for "lists files please": 1 of 2 match (snapshot 1)'
    assert re.search(r"^Looked up: lists, files\. Ranked by words( and meaning| only \(.+\))\.$",
                     text, re.M)
    assert re.search(r"^lister\s+\d+\.\d\d\s+Lists files\s+workspace$", text, re.M)
    assert render_plain(run(runtime, "/skills lists files please").shown[0]) == text
    everyday = render_plain(run(runtime, "/skills what is the way").shown[0])
    assert "none of them is looked up" in everyday
    assert "No skill matches these words." in render_plain(run(runtime, "/skills zzz").shown[0])
    assert state(runtime) == before


def test_tool_dispatch_runs_the_tool_without_a_model(runtime: LilyRuntime) -> None:
    result = run(runtime, "/ls").shown[0]
    assert render_plain(result) == "lister (list)\n\nskills/\ndata.txt  (5 bytes)"
    same = run(runtime, "/skill lister .").shown[0]
    assert render_plain(same).endswith("data.txt  (5 bytes)")


def test_the_persons_own_tool_dispatch_is_not_asked_about(workspace: Path,
                                                         environ: dict[str, str]) -> None:
    """tools.ask is for the model's calls: /ls is the person's own yes (`run` fails
    the test if anything is asked)."""
    write_skill(workspace / "skills", "lister", "---\nsummary: Lists files\n"
                "invocation_mode: tool_dispatch\ncommand: ls\ncommand_tool: list\n---\n")
    (workspace / "data.txt").write_text("12345")
    asking = LilyRuntime.start(workspace, {**environ, "LILY_TOOLS_ASK": "list"})
    assert render_plain(run(asking, "/ls").shown[0]).endswith("data.txt  (5 bytes)")
    denying = LilyRuntime.start(workspace, {**environ, "LILY_TOOLS_DENY": "list"})
    assert "lister" not in [s.name for s in denying.session.skill_snapshot.skills]


def test_prompt_rewrite_returns_an_intent_then_needs_a_model(runtime: LilyRuntime) -> None:
    """The command says what to do (skill and request); the runtime builds the request."""
    outcome = runtime.run_command(parse_command("/a summarise this"))  # type: ignore[arg-type]
    assert outcome.intent == SkillInvocation("alpha", "summarise this")
    with pytest.raises(ModelNotConfiguredError):
        run(runtime, "/skill alpha summarise this")


def test_snapshot_is_stable_until_reload(runtime: LilyRuntime, workspace: Path) -> None:
    first = render_plain(run(runtime, "/skills").shown[0])
    write_skill(workspace / "skills", "gamma", skill_text("Added later"))
    write_skill(workspace / "skills", "alpha", skill_text("First skill, edited", command="a"))
    assert render_plain(run(runtime, "/skills").shown[0]) == first
    assert error_of(runtime, "/skill gamma") == (
        "no skill named 'gamma' in this session (snapshot 1).")
    reload = render_plain(run(runtime, "/reload_skills").shown[0])
    assert "Reloaded skills: snapshot 2 (was 1)" in reload
    assert re.search(r"^added\s+gamma$", reload, re.M)
    assert re.search(r"^changed\s+alpha$", reload, re.M)
    assert runtime.session.skill_snapshot.version == 2
    assert "gamma" in render_plain(run(runtime, "/skills").shown[0])
    again = render_plain(run(runtime, "/reload_skills").shown[0])
    assert "snapshot 3 (was 2)" in again and "No changes." in again


def test_reload_names_what_broke_and_every_alias_that_moved(runtime: LilyRuntime,
                                                            workspace: Path) -> None:
    skills = workspace / "skills"
    write_skill(skills, "bad_yaml", "---\nsummary: [never closed\n---\n")
    write_skill(skills, "bad_mode", "---\nsummary: x\ninvocation_mode: telepathy\n---\n")
    result = run(runtime, "/reload_skills").shown[0]
    text = render_plain(result)
    assert "No changes." not in text  # "excluded 3" alone hid which and why
    newly = next(b for b in result.blocks
                 if isinstance(b, Table) and b.headers[:1] == ("newly excluded",))
    assert [(row[0], row[1]) for row in newly.rows] == [("bad_mode", "malformed"),
                                                        ("bad_yaml", "malformed")]
    assert "telepathy" in newly.rows[0][3]  # the reason itself, not a count

    # The quickstart's suggestion: copy a skill, alias and all.
    (skills / "alpha_copy").mkdir()
    (skills / "alpha_copy" / "SKILL.md").write_text((skills / "alpha" / "SKILL.md").read_text())
    text = render_plain(run(runtime, "/reload_skills").shown[0])
    assert re.search(r"^added\s+alpha_copy$", text, re.M)
    assert re.search(r"^/a\s+alpha\s+\(dropped\)\s+alias /a is also claimed by alpha_copy; "
                     r"dropped for all of them \(use /skill alpha\)$", text, re.M), text
    assert "newly excluded" not in text  # the broken ones were reported already
    assert error_of(runtime, "/a hello") == "unknown command /a."

    (skills / "alpha_copy" / "SKILL.md").unlink()
    text = render_plain(run(runtime, "/reload_skills").shown[0])
    assert re.search(r"^/a\s+\(none\)\s+alpha\s*$", text, re.M), text  # back again


def test_reload_with_unreadable_root_fails_and_keeps_the_snapshot(
    runtime: LilyRuntime, workspace: Path
) -> None:
    before = state(runtime)
    skills = workspace / "skills"
    skills.rename(workspace / "moved")
    skills.write_text("a file where the skills folder was")
    message = error_of(runtime, "/reload_skills")
    assert message.startswith("Cannot read the workspace skills root")
    assert state(runtime) == before


def test_help_lists_commands_aliases_and_policy(runtime: LilyRuntime) -> None:
    plain = render_plain(run(runtime, "/help").shown[0])
    for line in ("/skills", "/reload_skills", "/a [request]", "alias of /skill alpha",
                 "/ls [request]"):
        assert line in plain
    assert re.search(r"^allow\s+\*$", plain, re.M) and re.search(r"^deny\s+\(nothing\)$", plain, re.M)
    detail = render_plain(run(runtime, "/help lister").shown[0])
    assert re.search(r"^mode\s+tool_dispatch$", detail, re.M)
    assert re.search(r"^command tool\s+list$", detail, re.M)


def test_agent_switch_rebuilds_persona_only(runtime: LilyRuntime, workspace: Path) -> None:
    (workspace / "persona" / "critic").mkdir(parents=True)
    (workspace / "persona" / "critic" / "SOUL.md").write_text("Be critical.")
    snapshot = runtime.session.skill_snapshot
    shown = render_plain(run(runtime, "/agent").shown[0])
    assert re.search(r"^critic\s*$", shown, re.M) and re.search(r"^default\s+active$", shown, re.M)
    assert re.search(r"^agent\s+status$", shown, re.M)  # every column has a header
    switched = render_plain(run(runtime, "/agent critic").shown[0])
    assert "Switched to agent critic" in switched
    assert runtime.session.active_agent == "critic"
    assert [f.content for f in runtime.session.persona.files] == ["Be critical."]
    assert runtime.session.skill_snapshot is snapshot


def test_hostile_summary_is_escaped_in_html_and_markdown(workspace: Path,
                                                         environ: dict[str, str]) -> None:
    write_skill(workspace / "skills", "evil",
                "---\nsummary: '<img src=x onerror=alert(1)> **bold** | pipe'\n---\n")
    runtime = LilyRuntime.start(workspace, environ)
    result = run(runtime, "/skills").shown[0]
    html = render_html(result)
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    markdown = render_markdown(result)
    assert "<img" not in markdown
    assert r"&lt;img src=x onerror=alert\(1\)&gt; \*\*bold\*\* \| pipe" in markdown


def test_parse_command_argument_spans_lines() -> None:
    parsed = parse_command("\n  /skill echo first line\nsecond line\n")
    assert parsed is not None
    assert (parsed.name, parsed.argument) == ("skill", "echo first line\nsecond line")
    assert parse_command("hello /skills") is None


@pytest.mark.parametrize(("yaml_value", "shown"), [
    ("{1: a, b: c}", '{"1": "a", "b": "c"}'),  # non-string keys
    ("&a [*a]", "(not shown: Circular reference detected)"),  # a list holding itself
])
def test_help_shows_odd_frontmatter_values_safely(workspace: Path, environ: dict[str, str],
                                                  yaml_value: str, shown: str) -> None:
    write_skill(workspace / "skills", "odd", f"---\nsummary: s\nfoo: {yaml_value}\n---\n")
    runtime = LilyRuntime.start(workspace, environ)
    plain = render_plain(run(runtime, "/help odd").shown[0])
    assert re.search(r"^foo \(not used by Lily\)\s+" + re.escape(shown) + "$", plain, re.M)


def test_help_on_an_alias_bomb_is_bounded(workspace: Path, environ: dict[str, str]) -> None:
    levels = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    write_skill(workspace / "skills", "bomb", "---\nsummary: s\n" + "\n".join(levels) + "\n---\n")
    runtime = LilyRuntime.start(workspace, environ)
    started = time.perf_counter()
    result = run(runtime, "/help bomb").shown[0]
    html = render_html(result)
    assert time.perf_counter() - started < 10  # 9**10 strings if expanded (never ending)
    assert len(html) < 100_000 and "(truncated)" in html


# --- Claude-style invocation: /skill:<name>, /<name>, user-invocable ---------------------


@pytest.fixture
def claude(workspace: Path, environ: dict[str, str]) -> LilyRuntime:
    skills = workspace / "skills"
    write_skill(skills, "argskill", "---\ndescription: Greets\nargument-hint: <who> [what]\n"
                                    "---\nGreet $0.\n")
    write_skill(skills, "modelonly", "---\nsummary: Background\nuser-invocable: false\n"
                                     "command: mo\n---\nKnow this.\n")
    write_skill(skills, "help", "---\nsummary: Named like a built-in\n---\nHelp body.\n")
    write_skill(skills, "planner", "---\nsummary: Plans\ncommand: review\n---\nPlan.\n")
    write_skill(skills, "review", "---\nsummary: Reviews\n---\nReview.\n")
    write_skill(skills, "broken", "---\nsummary: [oops\n---\n")
    return LilyRuntime.start(workspace, environ)


@pytest.mark.parametrize(("code", "command", "skill", "typed"), [
    ('/argskill hello "big world"', "argskill", "argskill", 'hello "big world"'),
    ("/skill:argskill hello\nsecond line", "skill:argskill", "argskill", "hello\nsecond line"),
    ("/skill argskill hello", "skill", "argskill", "hello"),
    ("/review this", "review", "planner", "this"),  # the alias wins over the skill's name
    ("/skill review this", "skill", "review", "this"),
])
def test_every_form_invokes_its_skill(claude: LilyRuntime, code: str, command: str,
                                      skill: str, typed: str) -> None:
    result = claude.run_command(parse_command(code))  # type: ignore[arg-type]
    assert (result.command, result.intent) == (command, SkillInvocation(skill, typed))


@pytest.mark.parametrize(("code", "message"), [
    *((code, "skill 'modelonly' is for the model only (user-invocable: false); no / "
             "command invokes it.")
      for code in ("/modelonly", "/skill modelonly x", "/skill:modelonly", "/mo x")),
    ("/skill:", "/skill: requires a skill name (/skill:<name>)."),
    ("/skill:nope", "no skill named 'nope' in this session (snapshot 1)."),
    ("/nope", "unknown command /nope."),
    ("/Argskill", "unknown command /Argskill."),
])
def test_claude_style_errors_change_nothing(claude: LilyRuntime, code: str,
                                            message: str) -> None:
    before = state(claude)
    assert error_of(claude, code) == message
    assert state(claude) == before


def test_a_builtin_wins_and_an_excluded_name_says_why(claude: LilyRuntime) -> None:
    assert run(claude, "/help").shown[0].title == "Lily commands"
    assert error_of(claude, "/broken").startswith(
        "skill 'broken' is not available in this session (snapshot 1): malformed: ")
    outcome = claude.run_command(parse_command("/skill help now"))  # type: ignore[arg-type]
    assert outcome.intent == SkillInvocation("help", "now")


def test_help_lists_the_forms_hints_and_dynamic_context(claude: LilyRuntime) -> None:
    plain = render_plain(run(claude, "/help").shown[0])
    for row in (r"/skill:<name> \[request\]\s+the same$",
                r"/<skill-name> \[request\]\s+the same, for a skill you may invoke",
                r"/argskill <who> \[what\]\s+/skill argskill$",
                r"/review \[request\]\s+alias of /skill planner$"):
        assert re.search(row, plain, re.M), row
    assert "/mo " not in plain  # an alias of a skill for the model only is no command
    assert ("A SKILL.md's !`command` lines (Claude Code's dynamic context) are never run "
            "by Lily: the model sees them as text.") in plain
    detail = render_plain(run(claude, "/help argskill").shown[0])
    assert re.search(r"^argument hint\s+<who> \[what\]$", detail, re.M)
    hidden = render_plain(run(claude, "/help modelonly").shown[0])
    assert re.search(r"^person invocation\s+none: for the model only \(user-invocable: "
                     r"false\)$", hidden, re.M)


# --- a command is one record and one line ------------------------------------------


def test_a_new_command_is_one_record_registered_once(workspace: Path,
                                                     environ: dict[str, str]) -> None:
    """What a newcomer writes to add `/stamp`: one module's handler and record, one
    line in the table. /help, completion, Shift-Tab's resolver, the loader's reserved
    names and running it all follow from the record."""
    import asyncio

    from lily_kernel.commands import (
        CommandContext,
        CommandOutcome,
        CommandSpec,
        complete,
        default_commands,
    )
    from lily_kernel.display import Text

    async def stamp(ctx: CommandContext, argument: str) -> CommandOutcome:
        return CommandOutcome(CommandResult("stamp", "Stamped", (Text(argument or "-"),)))

    table = default_commands()
    table.register(CommandSpec("stamp", "stamp a label", stamp, usage="/stamp [label]"))
    write_skill(workspace / "skills", "stamper", skill_text("Stamps", command="stamp"))
    runtime = LilyRuntime.start(workspace, environ, commands=table)
    help_text = render_plain(runtime.run_command(parse_command("/help")))  # type: ignore[arg-type]
    assert any(line.startswith("/stamp [label] ") and line.endswith(" stamp a label")
               for line in help_text.splitlines())
    done = complete("/st", 3, runtime.session.skill_snapshot, [], table)
    assert done.matches == ("/stamp",) and done.types == ("command",)
    shown = runtime.run_command(parse_command("/stamp approved"))  # type: ignore[arg-type]
    assert render_plain(shown) == "Stamped\n\napproved"
    [clash] = [d for d in runtime.session.skill_snapshot.diagnostics if d.skill == "stamper"]
    assert "collides with the built-in /stamp" in clash.reason
    assert asyncio.iscoroutinefunction(stamp)


def test_docs_commands_table_lists_every_command() -> None:
    """docs/commands.md's table has a row for each registered command's usage."""
    from lily_kernel.commands import default_commands

    doc = (Path(__file__).resolve().parents[2] / "docs" / "commands.md").read_text()
    rows = {line.split("|")[1].strip().strip("`") for line in doc.splitlines()
            if line.startswith("| `/")}
    for command in default_commands():
        assert f"/{command.name}" in {row.split()[0] for row in rows}, command.name


def test_code_in_lilys_words_is_shown_as_code_not_backticks(runtime: LilyRuntime) -> None:
    """`/help`'s lines (the model's `python` tool in /python's, `auto` in /policy's) and
    /python's own hint showed their backticks literally in the notebook."""
    for code in ("/help", "/python"):
        [result] = run(runtime, code).shown
        html, markdown = render_html(result), render_markdown(result)
        assert "`" not in html, html
        assert "\\`" not in markdown, markdown
    assert "<code>/python restart</code>" in html and "`/python restart`" in markdown
    help_html = render_html(run(runtime, "/help").shown[0])
    assert "the model&#x27;s <code>python</code> tool" in help_html
    assert "<code>auto</code>" in help_html


def _python_status(runtime: LilyRuntime) -> dict[str, str]:
    [result] = run(runtime, "/python").shown
    [fields] = [b for b in result.blocks if hasattr(b, "items")]
    return dict(fields.items)  # type: ignore[attr-defined]


def _kernelspec(root: Path, name: str, display_name: str) -> None:
    import json
    import sys

    (root / "kernels" / name).mkdir(parents=True)
    (root / "kernels" / name / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": display_name, "language": "python"}))


def test_python_names_its_kernel_once_and_a_held_one_too(
        workspace: Path, environ: dict[str, str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """"Python (ds) (ds)"; and `/python` alone did not say that the python_kernel the
    folder's lily.yaml names waits for its trust."""
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    _kernelspec(tmp_path / "jupyter", "ds", "Python (ds)")
    _kernelspec(tmp_path / "jupyter", "py", "Data science")
    mine = LilyRuntime.start(workspace, {**environ, "LILY_PYTHON_KERNEL": "ds"})
    assert _python_status(mine)["Kernel"] == "Python (ds)"
    mine = LilyRuntime.start(workspace, {**environ, "LILY_PYTHON_KERNEL": "py"})
    assert _python_status(mine)["Kernel"] == "Data science (py)"
    (workspace / "lily.yaml").write_text("python_kernel: ds\n")
    untrusted = {k: v for k, v in environ.items() if k != "LILY_TRUST"}
    status = _python_status(LilyRuntime.start(workspace, untrusted))
    assert status["Kernel"] == "Python (Lily's environment)"
    assert status["Held"].startswith("lily.yaml's python_kernel: ds (")
    assert status["Held"].endswith(", until you trust this folder: `/trust`")
    assert "Held" not in _python_status(LilyRuntime.start(workspace, environ))
