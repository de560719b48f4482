"""execution/environments.py and execution/installs.py: which environment `python_kernel`
names (a venv is its own folder, not the base interpreter its `bin/python` links to),
the workspace's environment for packages, the host's pip settings a run sees; and the
model's line about a missing module (prompting/runs.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lily_kernel.errors import ToolError
from lily_kernel.execution.environments import (
    PythonEnvironment,
    environment_interpreter,
    find_environment,
    lilys_environment,
    names_a_path,
)
from lily_kernel.execution.installs import (
    INSTALLS,
    RunEnvironment,
    make_installs,
    pip_settings,
    prepare_environment,
)
from lily_kernel.execution.runner import RunResult
from lily_kernel.execution.sandbox import find_sandbox
from lily_kernel.execution.subkernel import RunReply
from lily_kernel.prompting.runs import kernel_text, process_text

VERSION = "{}.{}".format(*sys.version_info[:2])
BOX = find_sandbox(os.environ)
needs_bwrap = pytest.mark.skipif(not BOX.available and os.environ.get("CI") != "true",
                                 reason=f"no working bubblewrap here ({BOX.reason})")


def make_venv(folder: Path) -> Path:
    """A real venv (no pip), its interpreter a link to the base one, as `venv` makes it."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    return folder / "bin" / "python"


def _environment(prefix: Path, site: tuple[Path, ...] = ()) -> PythonEnvironment:
    return PythonEnvironment(prefix / "bin" / "python", prefix, Path(sys.base_prefix),
                             VERSION, site)


def test_what_names_a_path_and_what_names_a_kernelspec() -> None:
    assert all(map(names_a_path, ["~/.venvs/ds", ".venv", "/opt/conda/envs/ds/bin/python",
                                  "envs/ds"]))
    assert not any(map(names_a_path, ["python3", "ds", "conda-env-ds-py"]))


def test_an_environment_folder_names_its_interpreter_unresolved(tmp_path: Path) -> None:
    """`~/.venvs/ds` is HOME's, `.venv` the workspace's; the venv's `bin/python` is kept
    as it lies (a link to the base interpreter), never resolved to it."""
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    workspace.mkdir()
    python = make_venv(home / ".venvs" / "ds")
    make_venv(workspace / ".venv")
    environ = {"HOME": str(home)}
    assert python.is_symlink()
    assert environment_interpreter("~/.venvs/ds", workspace, environ) == python
    assert environment_interpreter(str(python), workspace, environ) == python
    assert environment_interpreter(".venv", workspace, environ) == \
        workspace / ".venv" / "bin" / "python"


def test_what_is_no_interpreter_is_one_clear_line(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    shims = tmp_path / ".pyenv" / "shims"
    shims.mkdir(parents=True)
    (shims / "python").write_text("#!/usr/bin/env bash\nexec pyenv exec python \"$@\"\n")
    environ = {"HOME": str(tmp_path)}
    with pytest.raises(ToolError, match="no Python in 'empty'"):
        environment_interpreter("empty", tmp_path, environ)
    with pytest.raises(ToolError, match="does not exist"):
        environment_interpreter("~/.venvs/none", tmp_path, environ)
    with pytest.raises(ToolError, match="pyenv which python"):
        environment_interpreter("~/.pyenv/shims/python", tmp_path, environ)


@needs_bwrap
def test_a_venvs_environment_is_the_venv_not_its_base_interpreter(tmp_path: Path) -> None:
    """The bug of #36: the installation was `realpath(argv[0]).parent.parent`, the base
    interpreter's, so a venv under home or /tmp was never shown to the kernel."""
    venv = tmp_path / "home" / ".venvs" / "ds"
    python = make_venv(venv)
    assert BOX.bwrap is not None
    found = find_environment(python, BOX.bwrap)
    assert found.prefix == venv and found.interpreter == python
    assert Path(os.path.realpath(found.base_prefix)) == Path(os.path.realpath(sys.base_prefix))
    assert venv / "lib" / f"python{VERSION}" / "site-packages" in found.site_packages
    assert not found.has_ipykernel and not found.has_pip
    assert venv in found.shown and Path(os.path.realpath(sys.base_prefix)) in found.shown
    assert find_environment(python, BOX.bwrap) is found  # asked once


@needs_bwrap
def test_a_whole_installation_is_its_own_environment() -> None:
    """A conda environment or a pyenv version is an installation, not a venv: its prefix
    and its base are the same folder (here: the interpreter Lily's venv was made from)."""
    base = Path(os.path.realpath(sys.base_prefix))
    interpreter = base / "bin" / f"python{VERSION}"
    assert BOX.bwrap is not None
    found = find_environment(interpreter, BOX.bwrap)
    assert Path(os.path.realpath(found.prefix)) == Path(os.path.realpath(found.base_prefix))
    assert Path(os.path.realpath(found.prefix)) == base and base in found.shown


@needs_bwrap
def test_what_does_not_answer_as_python_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_bytes(b"\x7fELF-not-really")
    fake.chmod(0o755)
    assert BOX.bwrap is not None
    with pytest.raises(ToolError, match="did not answer as Python does"):
        find_environment(fake, BOX.bwrap)


def test_the_workspaces_installs_go_over_the_kernels_environment(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    site = tmp_path / "env" / "lib" / f"python{VERSION}" / "site-packages"
    environment = _environment(tmp_path / "env", (site,))
    made = make_installs(workspace, environment)
    assert made == workspace / INSTALLS
    assert (made / ".gitignore").read_text().endswith("*\n")
    config = (made / "pyvenv.cfg").read_text()
    assert f"home = {os.path.dirname(os.path.realpath(environment.interpreter))}" in config
    pth = made / "lib" / f"python{VERSION}" / "site-packages" / "_lily_environment.pth"
    assert pth.read_text() == f"import site; site.addsitedir({str(site)!r})\n"
    assert os.readlink(made / "bin" / "python") == os.path.realpath(environment.interpreter)
    assert os.access(made / "bin" / "pip", os.X_OK)
    (made / "pyvenv.cfg").write_text("home = /somewhere/else\n")  # a run changed it
    make_installs(workspace, environment)
    assert (made / "pyvenv.cfg").read_text() == config


def test_a_link_on_the_way_makes_no_installs(tmp_path: Path) -> None:
    """A downloaded folder's `.lily/venv` that is a link to the person's files: Lily
    writes nothing through it (and a run gets no writable environment)."""
    workspace, elsewhere = tmp_path / "workspace", tmp_path / "elsewhere"
    (workspace / ".lily").mkdir(parents=True)
    elsewhere.mkdir()
    (workspace / ".lily" / "venv").symlink_to(elsewhere)
    assert make_installs(workspace, _environment(tmp_path / "env")) is None
    assert list(elsewhere.iterdir()) == []


def test_an_environment_in_the_workspace_is_its_own_but_never_lilys(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = tmp_path / "workspace"
    (workspace / ".venv").mkdir(parents=True)
    assert make_installs(workspace, _environment(workspace / ".venv")) == workspace / ".venv"
    assert not (workspace / ".lily").exists()
    monkeypatch.setattr(sys, "prefix", str(workspace / ".venv"))  # Lily's, in its own repo
    assert make_installs(workspace, _environment(workspace / ".venv")) == \
        workspace / INSTALLS


def test_a_run_gets_the_environments_bin_first_and_no_install_elsewhere(
        tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    environment = lilys_environment()
    home = tmp_path / "home"
    (home / ".config" / "pip").mkdir(parents=True)
    (home / ".config" / "pip" / "pip.conf").write_text(
        f"[global]\nindex-url = https://pypi.example.org/simple\ncert = {home}/ca.pem\n")
    (home / "ca.pem").write_text("CERT\n")
    environ = {"HOME": str(home), "PIP_INDEX_URL": "https://pypi.example.org/simple",
               "PIP_EXTRA_INDEX_URL": "https://user:hunter2secret@private.example/simple",
               "PIP_TARGET": "/usr/lib/python3/dist-packages", "PIP_PROXY": "http://x:3128",
               "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt"}
    run = prepare_environment(environment, workspace.resolve(), environ)
    assert run.installs == workspace / INSTALLS
    assert run.python == workspace / INSTALLS / "bin" / "python"
    env = run.applied({"PATH": "/usr/bin:/bin", "HOME": str(home)})
    assert env["PATH"].split(":")[:2] == [str(workspace / INSTALLS / "bin"),
                                          str(environment.bin)]
    assert env["PATH"].endswith("/usr/bin:/bin")
    assert env["VIRTUAL_ENV"] == str(workspace / INSTALLS)
    assert env["PIP_INDEX_URL"] == "https://pypi.example.org/simple"
    assert {"PIP_EXTRA_INDEX_URL", "PIP_TARGET", "PIP_PROXY"}.isdisjoint(env)
    assert (home / ".config" / "pip" / "pip.conf").resolve() in run.shown
    assert (home / "ca.pem").resolve() in run.shown


def test_a_pip_conf_holding_a_credential_is_not_shown(tmp_path: Path) -> None:
    (tmp_path / ".pip").mkdir()
    conf = tmp_path / ".pip" / "pip.conf"
    conf.write_text("[global]\nindex-url = https://ada:s3cr3t-t0ken-value@idx.example/simple\n")
    _, files = pip_settings({"HOME": str(tmp_path)})
    assert conf.resolve() not in files
    conf.write_text("[global]\nindex-url = https://idx.example/simple\n")
    assert conf.resolve() in pip_settings({"HOME": str(tmp_path)})[1]


def test_run_environment_path_keeps_each_folder_once(tmp_path: Path) -> None:
    environment = _environment(tmp_path / "env")
    run = RunEnvironment(environment, environment.interpreter, None)
    env = run.applied({"PATH": f"{environment.bin}:/usr/bin"})
    assert env["PATH"] == f"{environment.bin}:/usr/bin"


def _reply(error: str | None, status: str = "error") -> RunReply:
    return RunReply(status, (), error, 1.0, "", 0)  # type: ignore[arg-type]


def test_a_missing_module_is_named_with_how_to_install_it() -> None:
    reply = _reply("ModuleNotFoundError: No module named 'polars.io'")
    assert reply.error_name == "ModuleNotFoundError" and reply.missing_module == "polars"
    text = kernel_text(reply, 10_000)
    assert "the module 'polars' is not installed" in text
    assert "pip install" in text and "the person must say yes" in text
    assert _reply("ValueError: No module named 'x'").missing_module is None
    assert "not installed" not in kernel_text(_reply("ValueError: bad"), 10_000)


def test_a_scripts_missing_module_is_named_too() -> None:
    failed = RunResult(1, 5.0, "Traceback...\nModuleNotFoundError: No module named 'pandas'\n",
                       60)
    assert "the module 'pandas' is not installed" in process_text(failed)
    ran = RunResult(0, 5.0, "ModuleNotFoundError: No module named 'pandas'\n", 45)
    assert "not installed" not in process_text(ran)
