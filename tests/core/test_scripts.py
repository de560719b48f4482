"""Skill scripts: planning (interpreter, environment, sandbox), running, and the policy."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sys
import time
from pathlib import Path

import pytest

from lily_kernel.errors import ToolError
from lily_kernel.execution.runner import ScriptPlan, ScriptResult, run_script
from lily_kernel.execution.sandbox import REAPER, Sandbox, find_sandbox, script_environment
from lily_kernel.tools import ActiveSkill, ToolContext, ToolPolicy, default_registry
from lily_kernel.tools.scripts import plan_script
from tests.conftest import FIXTURES
from tests.support.waiting import until

NO_SANDBOX = Sandbox(None, "bubblewrap (bwrap) is not installed")
SECRET = "sk-script-test-SECRET-1234567890"
ENVIRON = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp",
           "OPENAI_API_KEY": SECRET, "MY_SERVICE_TOKEN": "tok-abcdefgh",
           "LILY_API_BASE": "http://user:pw@proxy/v1", "INNOCENT": f"has {SECRET} inside",
           "PIECE": f"tail={SECRET[-10:]}", "LANG": "C.UTF-8"}


def sandbox_or_skip() -> Sandbox:
    found = find_sandbox(os.environ)
    if not found.available:
        if os.environ.get("CI"):
            pytest.fail(f"CI must test the sandbox (setup.sh installs bubblewrap): {found.reason}")
        pytest.skip(found.reason)
    return found


@pytest.fixture
def setup(tmp_path: Path) -> tuple[ActiveSkill, ToolContext]:
    folder = tmp_path / "skills-root" / "formfill"
    shutil.copytree(FIXTURES / "skill_files" / "formfill", folder)
    workspace = tmp_path / "workspace"
    (workspace / "skills").mkdir(parents=True)
    (workspace / "lily.yaml").write_text("agent: default\n")
    ctx = ToolContext(workspace, protected=((workspace / "lily.yaml"), workspace / "skills"))
    return ActiveSkill("formfill", folder), ctx


def run(plan: ScriptPlan, timeout: float = 30, max_chars: int = 20_000) -> ScriptResult:
    return asyncio.run(run_script(plan, timeout, max_chars))


def test_the_environment_has_no_secrets() -> None:
    env = script_environment(ENVIRON)
    assert set(env) >= {"PATH", "HOME", "LANG"}
    # PIECE holds only the key's last 10 characters: a part the redactor hides too.
    for gone in ("OPENAI_API_KEY", "MY_SERVICE_TOKEN", "LILY_API_BASE", "INNOCENT", "PIECE"):
        assert gone not in env
    assert SECRET not in repr(env)


@pytest.mark.parametrize("script, first_word", [
    ("scripts/fill_form.py", sys.executable), ("scripts/noext", sys.executable),
])
def test_python_runs_with_the_kernels_interpreter(setup, script: str, first_word: str) -> None:
    skill, ctx = setup
    plan = plan_script(skill, script, ["a", "b"], ctx, ENVIRON, NO_SANDBOX)
    assert plan.argv[:4] == (sys.executable, "-I", "-S", str(REAPER))  # unsandboxed: reaped
    assert plan.argv[4] == first_word
    assert plan.argv[-2:] == ("a", "b") and plan.script == script
    assert plan.cwd == ctx.workspace.resolve()


def test_shell_and_node_by_extension(setup) -> None:
    skill, ctx = setup
    sh = plan_script(skill, "scripts/hello.sh", ["you"], ctx, ENVIRON, NO_SANDBOX)
    assert os.path.basename(sh.argv[4]) == "sh"
    assert run(sh).output == "hello from sh: you\n"
    if shutil.which("node") is None:
        with pytest.raises(ToolError, match="needs node"):
            plan_script(skill, "scripts/hello.js", [], ctx, {"PATH": "/nonexistent"}, NO_SANDBOX)
    else:
        js = plan_script(skill, "scripts/hello.js", ["x"], ctx, ENVIRON, NO_SANDBOX)
        assert run(js).output == "hello from node x\n"


@pytest.mark.parametrize("script, reason", [
    ("references/forms.md", "not in the skill's scripts/ folder"),
    ("SKILL.md", "not in the skill's scripts/ folder"),
    ("scripts/missing.py", "no script 'scripts/missing.py'"),
    ("scripts/../../formfill/scripts/fill_form.py", "uses '..'"),
])
def test_only_files_of_scripts_run(setup, script: str, reason: str) -> None:
    skill, ctx = setup
    with pytest.raises(ToolError, match=reason.replace("(", r"\(")):
        plan_script(skill, script, [], ctx, ENVIRON, NO_SANDBOX)


def test_a_run_reports_exit_code_output_and_size(setup) -> None:
    skill, ctx = setup
    ok = run(plan_script(skill, "scripts/fill_form.py", ["Ada", "2024-01-02"], ctx, ENVIRON,
                         NO_SANDBOX))
    assert (ok.exit_code, ok.output) == (0, "filled the form for Ada on 2024-01-02\n")
    assert ok.output_bytes == len(ok.output)
    assert (ctx.workspace / "filled.txt").read_text() == "name: Ada\ndate: 2024-01-02\n"
    failed = run(plan_script(skill, "scripts/fail.py", [], ctx, ENVIRON, NO_SANDBOX))
    assert failed.exit_code == 3 and failed.for_model(30) == "[exit code 3]\nfailing\n"


def test_output_is_capped(setup) -> None:
    skill, ctx = setup
    result = run(plan_script(skill, "scripts/chatty.py", [], ctx, ENVIRON, NO_SANDBOX),
                 max_chars=1000)
    assert result.output_bytes == len("chatty") * 100000 + 1
    assert result.output.startswith("chatty" * 10)
    assert result.output.endswith(f"[... output truncated: {result.output_bytes:,} bytes in all]")
    assert len(result.output) < 1100


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is dead, merely not yet reaped
        return stat.read().split(")")[-1].split()[0] != "Z"


def _wait_dead(pid: int) -> bool:
    deadline = time.monotonic() + 30  # a bound for a failure: a passing test returns at once
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_the_time_limit_kills_the_whole_process_group(setup) -> None:
    skill, ctx = setup
    plan = plan_script(skill, "scripts/slow.py", ["slow.pid"], ctx, ENVIRON, NO_SANDBOX)
    began = time.monotonic()
    result = run(plan, timeout=1.5)
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - began < 10
    assert "ran longer than the time limit (1.5 s)" in result.for_model(1.5)
    child = int((ctx.workspace / "slow.pid").read_text())
    assert _wait_dead(child), "the script's own child outlived the time limit"


def test_cancelling_kills_the_process_group(setup) -> None:
    skill, ctx = setup
    plan = plan_script(skill, "scripts/slow.py", ["slow.pid"], ctx, ENVIRON, NO_SANDBOX)

    async def cancel_soon() -> None:
        task = asyncio.ensure_future(run_script(plan, 60))
        pid_file = ctx.workspace / "slow.pid"
        await until(lambda: pid_file.exists() and pid_file.read_text().strip(),
                    "the script started")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_soon())
    assert _wait_dead(int((ctx.workspace / "slow.pid").read_text()))


def test_in_the_sandbox_no_network_and_only_the_workspace_is_writable(setup, tmp_path) -> None:
    sandbox = sandbox_or_skip()
    skill, ctx = setup
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    outside = tmp_path / "outside.txt"  # under /tmp: the sandbox has its own, empty /tmp
    var_tmp = Path("/var/tmp") / f"lily-sandbox-probe-{os.getpid()}"
    args = [f"connect=127.0.0.1:{port}", f"write={outside}", f"write={var_tmp}",
            "write=inside.txt",
            f"write={ctx.workspace / 'lily.yaml'}", f"write={ctx.workspace / 'skills' / 'x'}",
            f"write={skill.folder / 'scripts' / 'x'}"]
    plan = plan_script(skill, "scripts/probe.py", args, ctx, ENVIRON, sandbox)
    assert plan.sandboxed and plan.argv[0] == sandbox.bwrap
    out = run(plan).output
    listener.close()
    assert f"connect 127.0.0.1:{port}: blocked" in out
    assert not outside.exists()
    assert f"write {var_tmp}: refused (Read-only file system)" in out and not var_tmp.exists()
    assert "write inside.txt: written" in out and (ctx.workspace / "inside.txt").exists()
    assert f"write {ctx.workspace / 'lily.yaml'}: refused" in out
    assert f"write {ctx.workspace / 'skills' / 'x'}: refused" in out
    assert f"write {skill.folder / 'scripts' / 'x'}: refused" in out
    assert "secret variables: none" in out and "lily variables: none" in out


def _socket_folder() -> Path:
    """Where a Unix socket of the host's can be made: /run (root), else the user's own."""
    for folder in (Path("/run"), Path(os.environ.get("XDG_RUNTIME_DIR") or "/nonexistent")):
        if folder.is_dir() and os.access(folder, os.W_OK):
            return folder
    pytest.skip("no writable /run or XDG_RUNTIME_DIR for a host socket")


def test_in_the_sandbox_the_hosts_unix_sockets_are_out_of_reach(setup) -> None:
    """--unshare-net cuts TCP, not a socket file: Docker's, D-Bus's and the user's agents
    live under /run, which the sandbox empties."""
    sandbox = sandbox_or_skip()
    skill, ctx = setup
    path = _socket_folder() / f"lily-sandbox-test-{os.getpid()}.sock"
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(path))
        listener.listen()
        plan = plan_script(skill, "scripts/probe.py", [f"connect-unix={path}"], ctx, ENVIRON,
                           sandbox)
        out = run(plan).output
        unsandboxed = run(plan_script(skill, "scripts/probe.py", [f"connect-unix={path}"],
                                      ctx, ENVIRON, NO_SANDBOX)).output
    finally:
        listener.close()
        path.unlink(missing_ok=True)
    assert f"connect-unix {path}: blocked" in out, out
    assert f"connect-unix {path}: open" in unsandboxed  # the socket did listen


def test_without_the_sandbox_the_script_reaches_what_the_kernel_reaches(setup) -> None:
    skill, ctx = setup
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    plan = plan_script(skill, "scripts/probe.py", [f"connect=127.0.0.1:{port}"], ctx,
                       ENVIRON, NO_SANDBOX)
    assert not plan.sandboxed and plan.sandbox_note == NO_SANDBOX.reason
    out = run(plan).output
    listener.close()
    assert f"connect 127.0.0.1:{port}: open" in out
    assert "secret variables: none" in out


def test_a_missing_bwrap_is_reported() -> None:
    found = find_sandbox({"PATH": "/nonexistent"})
    assert not found.available and found.reason == "bubblewrap (bwrap) is not installed"


def test_policy_scripts_are_denied_by_default_and_star_does_not_cover_them() -> None:
    registry = default_registry()
    explicit = frozenset(t.name for t in registry if t.explicit)
    assert explicit == {"run_skill_script"}  # python and shell are asked instead
    star = ToolPolicy(allow="*", explicit=explicit)
    assert star.decision("run_skill_script") == "deny" and star.decision("read") == "allow"
    named = ToolPolicy(allow=("read", "run_skill_script"), explicit=explicit)
    assert named.decision("run_skill_script") == "allow"
    asked = ToolPolicy(allow="*", ask=("run_skill_script",), explicit=explicit)
    assert asked.decision("run_skill_script") == "ask"
    both = ToolPolicy(allow=("run_skill_script",), ask=("run_skill_script",), explicit=explicit)
    assert both.decision("run_skill_script") == "ask"  # ask wins over allow
    denied = ToolPolicy(allow="*", ask=("run_skill_script",), deny=("run_skill_script",),
                        explicit=explicit)
    assert denied.decision("run_skill_script") == "deny"  # deny wins over everything
    offered = [t.name for t in asked.model_tools(registry, frozenset({"read", "bash"}), skill_active=True)]
    # Bash keeps scripts (and the shell)
    assert offered == ["read", "read_skill_file", "run_skill_script", "shell"]
    assert "run_skill_script" not in [
        t.name for t in asked.model_tools(registry, frozenset({"read"}), skill_active=True)]


def test_the_sandbox_keeps_lilys_files_even_before_they_exist(tmp_path: Path) -> None:
    """A script cannot plant Lily's configuration or instructions (a missing one, held
    by no placeholder, is set aside after the run: #37), nor code that runs later (.git
    hooks, a virtualenv), nor read the workspace's .env or the home folder's private
    files; it still writes its outputs."""
    sandbox = sandbox_or_skip()
    folder = tmp_path / "skills-root" / "formfill"
    shutil.copytree(FIXTURES / "skill_files" / "formfill", folder)
    workspace, home = tmp_path / "workspace", tmp_path / "home"
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".venv" / "bin").mkdir(parents=True)
    (workspace / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (workspace / ".env").write_text("MY_SECRET=hunter2-workspace\n")
    (workspace / ".env.local").write_text("MY_SECRET=hunter2-local\n")
    (workspace / ".envrc").write_text("export MY_SECRET=hunter2-direnv\n")
    (workspace / "app" / "conda" / "conda-meta").mkdir(parents=True)  # one level down
    (workspace / "app" / "conda" / "bin").mkdir()
    (workspace / "app" / ".git" / "hooks").mkdir(parents=True)
    (workspace / "app" / ".env").write_text("MY_SECRET=hunter2-nested\n")
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (home / ".netrc").write_text("machine example password hunter2-home\n")
    lily_home = home / ".lily"
    ctx = ToolContext(workspace, protected=(workspace / "lily.yaml", workspace / "skills",
                                            workspace / "persona", lily_home,
                                            lily_home / "trust.json"))
    planted = ["lily.yaml", "persona/default/SOUL.md", "skills/echo/SKILL.md",
               ".agents/skills/x/SKILL.md", ".claude/settings.json", ".lily/sessions/x.jsonl",
               ".git/hooks/pre-commit", ".venv/bin/activate", "app/conda/bin/activate",
               "app/.git/hooks/pre-commit", ".envrc"]
    # As root, bubblewrap would leave the script CAP_SYS_ADMIN: undoing the binds first.
    marker = Path("/var/tmp") / f"lily-sandbox-remount-{os.getpid()}"
    undo = [f"unmount={workspace / 'lily.yaml'}", f"unmount={workspace / 'skills'}",
            f"unmount={workspace / '.env'}", "remount-root", f"write={marker}"]
    args = [*undo, *(f"plant={workspace / p}" for p in planted), "plant=outputs/report.txt",
            f"read={workspace / '.env'}", f"read={workspace / '.env.local'}",
            f"read={workspace / '.envrc'}", f"read={workspace / 'app' / '.env'}",
            f"read={home / '.ssh' / 'id_ed25519'}",
            f"read={home / '.netrc'}"]
    plan = plan_script(ActiveSkill("formfill", folder), "scripts/probe.py", args, ctx,
                       {**ENVIRON, "HOME": str(home)}, sandbox)
    out = run(plan).output
    for path in ("lily.yaml", "skills", ".env"):
        assert f"unmount {workspace / path}: refused" in out, out
    assert "remount-root: refused" in out and not marker.exists(), out
    missing = ("lily.yaml", "persona/", "skills/", ".agents/", ".claude/")
    for path in planted:
        done = "written" if path.startswith(missing) else "refused"
        assert f"plant {workspace / path}: {done}" in out, out
        assert not (workspace / path).exists() or path == ".envrc", path
    assert "[removed after the run: .agents, .claude, lily.yaml, persona, skills " in out, out
    assert "plant outputs/report.txt: written" in out
    assert (workspace / "outputs" / "report.txt").read_text() == "planted"
    assert "hunter2" not in out and "PRIVATE KEY" not in out, out
    # What the run made at the missing paths is set aside: the workspace is as it was.
    assert sorted(p.name for p in workspace.iterdir()) == [
        ".env", ".env.local", ".envrc", ".git", ".lily", ".venv", "app", "outputs"]
    assert (workspace / ".envrc").read_text() == "export MY_SECRET=hunter2-direnv\n"


def test_a_workspace_that_is_the_home_folder_keeps_its_dotfiles_hidden(tmp_path: Path) -> None:
    """Notebooks opened in the home folder: the script works in it, but the home
    folder's private files stay out of reach there too."""
    sandbox = sandbox_or_skip()
    folder = tmp_path / "skills-root" / "formfill"
    shutil.copytree(FIXTURES / "skill_files" / "formfill", folder)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (home / ".netrc").write_text("machine example password hunter2-home\n")
    (home / "notes.txt").write_text("my notes\n")
    (home / "outputs").mkdir()
    ctx = ToolContext(home, protected=(home / "lily.yaml", home / "skills"))
    args = [f"read={home / '.ssh' / 'id_ed25519'}", f"read={home / '.netrc'}",
            f"read={home / 'notes.txt'}", "plant=outputs/report.txt",
            f"plant={home / '.bashrc'}"]
    plan = plan_script(ActiveSkill("formfill", folder), "scripts/probe.py", args, ctx,
                       {**ENVIRON, "HOME": str(home)}, sandbox)
    out = run(plan).output
    assert "my notes" in out and "plant outputs/report.txt: written" in out, out
    assert "hunter2" not in out and "PRIVATE KEY" not in out, out
    assert f"plant {home / '.bashrc'}: refused" in out and not (home / ".bashrc").exists()
    # Nothing else was made at the home folder's top, not even a mount point.
    assert sorted(p.name for p in home.iterdir()) == [".netrc", ".ssh", "notes.txt", "outputs"]


# Where Jupyter was started from: the home folder itself, or a folder holding it (/home).
HOME_AT = pytest.mark.parametrize("workspace_is", ["the home folder", "its parent"])
# What an approved script planted that runs or is read later, outside the sandbox; and
# two names no list would have: nothing new may be made at the home folder's top.
HOME_PLANTS = (".bash_aliases", ".jupyter/jupyter_server_config.py", ".pam_environment",
               ".condarc", ".codex/config.toml", ".ipython/profile_default/startup/x.py",
               ".newdotfile", "new.txt")


def _home_in_workspace(tmp_path: Path, workspace_is: str) -> tuple[Path, Path]:
    """The home folder (tmp/users/alice) and the workspace: it, or its parent."""
    home = tmp_path / "users" / "alice"
    home.mkdir(parents=True)
    return home, home if workspace_is == "the home folder" else home.parent


def _lilys_paths(workspace: Path, home: Path, lily: Path) -> tuple[Path, ...]:
    """What the kernel protects (environment.py, `tool_context`) with the Lily
    home at `lily`: configuration, every skills root, the persona folders."""
    return (workspace / "lily.yaml", workspace / ".lily", lily, workspace / "skills",
            workspace / ".agents" / "skills", workspace / ".claude" / "skills",
            lily / "skills", home / ".agents" / "skills", home / ".claude" / "skills",
            workspace / "persona", lily / "persona", lily / "trust.json")


def _tree(folder: Path) -> set[str]:
    """Every path under `folder` (a placeholder left behind would show here)."""
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")}


@HOME_AT
def test_scripts_run_when_the_workspace_holds_the_home_folder_and_the_lily_home(
        tmp_path: Path, workspace_is: str) -> None:
    """Jupyter started from ~ with the Lily home at its default, ~/.lily: Lily's paths
    there, some missing, need no placeholder (the folder is hidden), so bubblewrap
    builds the sandbox and the user skill's script runs; nothing is left behind."""
    sandbox = sandbox_or_skip()
    home, workspace = _home_in_workspace(tmp_path, workspace_is)
    lily = home / ".lily"
    folder = lily / "skills" / "formfill"
    shutil.copytree(FIXTURES / "skill_files" / "formfill", folder)
    (home / "work").mkdir()
    before = _tree(workspace)
    ctx = ToolContext(workspace, protected=_lilys_paths(workspace, home, lily))
    planted = [lily / "skills" / "evil" / "SKILL.md", lily / "persona" / "default" / "SOUL.md",
               lily / "trust.json", workspace / "lily.yaml", workspace / "skills" / "x" / "SKILL.md"]
    args = [*(f"plant={p}" for p in planted), f"plant={home / 'work' / 'out.txt'}"]
    plan = plan_script(ActiveSkill("formfill", folder), "scripts/probe.py", args, ctx,
                       {**ENVIRON, "HOME": str(home)}, sandbox)
    result = run(plan)
    assert result.exit_code == 0, result.output
    for path in planted:  # at the workspace's top, missing: written, then set aside (#37)
        done = "written" if path.parent in (workspace, workspace / "skills" / "x") \
            and workspace != home else "refused"
        assert f"plant {path}: {done}" in result.output, result.output
    assert f"plant {home / 'work' / 'out.txt'}: written" in result.output
    left = {p for p in _tree(workspace) - before if not p.startswith(".lily/removed")}
    assert left == {(home / "work" / "out.txt").relative_to(workspace).as_posix()} | (
        {".lily"} if workspace != home else set())


@HOME_AT
def test_nothing_new_can_be_made_at_the_top_of_the_home_folder(tmp_path: Path,
                                                                workspace_is: str) -> None:
    """By rule, not by a list of names: in the workspace, the home folder's top is
    read-only (its hidden entries hidden, nothing new there, dotfile or not); its
    existing folders and files stay writable, and a link stays a link."""
    sandbox = sandbox_or_skip()
    home, workspace = _home_in_workspace(tmp_path, workspace_is)
    folder = tmp_path / "skills-root" / "formfill"
    shutil.copytree(FIXTURES / "skill_files" / "formfill", folder)
    (home / ".jupyter").mkdir()  # existing hidden folders: out of reach too
    (home / ".ipython" / "profile_default" / "startup").mkdir(parents=True)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (tmp_path / "dotfiles").mkdir()  # a dotfiles manager's absolute link
    (tmp_path / "dotfiles" / "token").write_text("hunter2-dotfiles\n")
    (home / ".config").symlink_to(tmp_path / "dotfiles")
    (home / "work").mkdir()
    (home / "current").symlink_to("work")
    (home / "notes.txt").write_text("my notes\n")
    lily = tmp_path / "lily-home"  # elsewhere: the sandbox could always be built
    ctx = ToolContext(workspace, protected=_lilys_paths(workspace, home, lily))
    before = _tree(workspace)
    made = [home / "work" / "sub" / "out.txt", home / "current" / "via-link.txt"]
    if workspace != home:  # the rest of the workspace is as before
        made.append(workspace / "shared" / "out.txt")
    args = [*(f"plant={home / p}" for p in HOME_PLANTS), *(f"plant={p}" for p in made),
            f"write={home / 'notes.txt'}", f"read={home / '.ssh' / 'id_ed25519'}",
            f"read={home / '.config' / 'token'}"]
    plan = plan_script(ActiveSkill("formfill", folder), "scripts/probe.py", args, ctx,
                       {**ENVIRON, "HOME": str(home)}, sandbox)
    out = run(plan).output
    for name in HOME_PLANTS:
        assert f"plant {home / name}: refused" in out, out
        assert not (home / name).exists(), name
    for path in made:
        assert f"plant {path}: written" in out, out
    assert (home / "work" / "via-link.txt").read_text() == "planted"
    assert f"write {home / 'notes.txt'}: written" in out
    assert (home / "notes.txt").read_text() == "x"
    assert "PRIVATE KEY" not in out and "hunter2" not in out, out
    new = [home / "work" / "sub", home / "work" / "sub" / "out.txt",
           home / "work" / "via-link.txt"]
    if workspace != home:  # and Lily's own folder, made by Lily where a run could write
        new += [workspace / "shared", workspace / "shared" / "out.txt", workspace / ".lily"]
    assert _tree(workspace) == before | {p.relative_to(workspace).as_posix() for p in new}


def test_a_scripts_environment_is_an_allowlist() -> None:
    """Credentials named outside any list of secret-sounding words stay out; only what a
    program needs, and what the person names in script_env, get through."""
    environ = {**ENVIRON, "GITHUB_PAT": "ghp_notreallyatoken", "MYSQL_PWD": "hunter2",
               "SLACK_WEBHOOK_URL": "https://hooks.slack.invalid/T000/B000/XXXX",
               "DATABASE_URL": "postgres://app:s3cret@db/app", "LC_ALL": "C.UTF-8",
               "MY_TOOL_HOME": "/opt/tool"}
    env = script_environment(environ)
    assert set(env) == {"PATH", "HOME", "LANG", "LC_ALL", "PYTHONDONTWRITEBYTECODE",
                        "PYTHONUNBUFFERED"}
    named = script_environment(environ, ("MY_TOOL_HOME", "GITHUB_PAT"))
    assert named["MY_TOOL_HOME"] == "/opt/tool" and named["GITHUB_PAT"] == "ghp_notreallyatoken"
    assert "MYSQL_PWD" not in named and "DATABASE_URL" not in named


def test_script_env_is_read_from_config_and_held_when_untrusted(tmp_path: Path,
                                                                monkeypatch) -> None:
    from lily_kernel.environment import Workspace

    (tmp_path / "lily.yaml").write_text("script_env: [MY_TOOL_HOME]\n")
    trusted = Workspace.load(tmp_path, {"LILY_TRUST": "workspace", "HOME": str(tmp_path)})
    assert trusted.config.script_env == ("MY_TOOL_HOME",)
    monkeypatch.delenv("LILY_TRUST")
    held = Workspace.load(tmp_path, {"HOME": str(tmp_path)})
    assert held.config.script_env == ()
    assert any(line.startswith("script_env: MY_TOOL_HOME (variables passed to skill scripts")
               for line in held.trust.held_settings)
    assert Workspace.load(tmp_path, {"HOME": str(tmp_path), "LILY_SCRIPT_ENV": "A, B"}
                                ).config.script_env == ("A", "B")


def test_a_process_left_holding_the_output_does_not_keep_the_cell_waiting(setup) -> None:
    """The script ends but a child it detached (setsid) keeps stdout open: the run ends
    a moment after the script, not at the time limit."""
    skill, ctx = setup
    (skill.folder / "scripts" / "detach.py").write_text(
        "import os, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'],\n"
        "                         start_new_session=True)\n"
        "print('parent done, child', child.pid)\n")
    plan = plan_script(skill, "scripts/detach.py", [], ctx, ENVIRON, NO_SANDBOX)
    began = time.monotonic()
    result = run(plan, timeout=20)
    assert time.monotonic() - began < 15  # well before the 20 s limit, even under load
    assert result.exit_code == 0 and "parent done" in result.output and not result.timed_out
    child = int(result.output.split()[-1])
    assert _wait_dead(child)  # outside the script's group, but holding its output: killed


DETACH_QUIETLY = (  # a double fork into a new session, its output closed: out of reach
    "import os, sys, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        os.close(1); os.close(2)\n"
    "        with open(sys.argv[1], 'w') as f: f.write(str(os.getpid()))\n"
    "        time.sleep(60); os._exit(0)\n"
    "    os._exit(0)\n"
    "os.wait()\n"
    "for _ in range(100):\n"
    "    if os.path.exists(sys.argv[1]) and open(sys.argv[1]).read(): break\n"
    "    time.sleep(0.05)\n"
    "print('detached')\n"
    "if len(sys.argv) > 2: time.sleep(60)\n")


@pytest.mark.parametrize("ending", ["the script ends", "the time limit"])
def test_without_the_sandbox_nothing_the_script_detached_outlives_it(setup, ending: str
                                                                    ) -> None:
    """A grandchild in a session of its own, holding no output, is still ended: when the
    script ends, and when the time limit stops it."""
    skill, ctx = setup
    (skill.folder / "scripts" / "quiet.py").write_text(DETACH_QUIETLY)
    args = ["quiet.pid", "wait"] if ending == "the time limit" else ["quiet.pid"]
    plan = plan_script(skill, "scripts/quiet.py", args, ctx, ENVIRON, NO_SANDBOX)
    result = run(plan, timeout=4)
    assert result.timed_out == (ending == "the time limit")
    if not result.timed_out:
        assert result.exit_code == 0 and "detached" in result.output
    assert _wait_dead(int((ctx.workspace / "quiet.pid").read_text()))


def test_a_script_that_cannot_start_without_the_sandbox_says_why(setup) -> None:
    skill, ctx = setup
    plan = plan_script(skill, "scripts/hello.sh", [], ctx, ENVIRON, NO_SANDBOX)
    gone = [*plan.argv[:4], "/nonexistent/sh", *plan.argv[5:]]  # the interpreter removed
    result = run(ScriptPlan(**{**plan.__dict__, "argv": tuple(gone)}))
    assert result.exit_code == 127 and "cannot start" in result.output


def test_an_empty_or_relative_path_entry_never_picks_the_workspaces_programs(
        setup, monkeypatch) -> None:
    """With PATH starting with `:` (an empty entry: the working folder, which is the
    kernel's), the folder's own `sh` ran the person's .sh skill scripts."""
    skill, ctx = setup
    monkeypatch.chdir(ctx.workspace)
    (skill.folder / "scripts" / "hello.sh").write_text("echo hello\n")
    planted = ctx.workspace / "sh"
    planted.write_text("#!/bin/sh\necho planted\n")
    planted.chmod(0o755)
    environ = {**ENVIRON, "PATH": f":bin:{ENVIRON['PATH']}"}
    plan = plan_script(skill, "scripts/hello.sh", [], ctx, environ, NO_SANDBOX)
    assert plan.argv[-2] != str(planted) and str(planted) not in plan.argv
    assert plan.env["PATH"] == ENVIRON["PATH"]


def test_no_sandboxed_script_runs_when_the_workspace_is_the_root_folder(setup) -> None:
    """JupyterLab started at `/`: the writable bind of the root laid the host's /tmp,
    /run, /proc and /dev back and left /usr writable to a root script."""
    skill, _ = setup
    sandbox = Sandbox("/usr/bin/bwrap", "")
    with pytest.raises(ToolError, match=r"the workspace is the root folder \(/\)"):
        plan_script(skill, "scripts/fill_form.py", [], ToolContext(Path("/")), ENVIRON,
                    sandbox)
