"""Where packages install, and what a run gets of the session's Python environment.

Runs never write Lily's own environment nor the person's (both are read-only in the
sandbox). When the kernel's environment lies in the workspace (`python_kernel: .venv`),
it is the workspace's own and packages install into it. Otherwise Lily makes one for
the workspace, `.lily/venv` (ignored by git: its own `.gitignore`, as `venv` writes one):
a venv over the kernel's interpreter whose `site-packages` comes first and the kernel's
environment's after (a `.pth` that adds each of its site folders), so `pip install` adds
only what is missing, and an upgrade shadows the environment's version without touching
it. Lily writes its few files on the host before each run, never through a link
(host_files.py); runs write its packages.

`RunEnvironment` is what a run gets: its `bin/` first on PATH (`python`, `pip` and the
environment's commands are the kernel's), the folders shown read-only, the one writable,
`VIRTUAL_ENV` (uv installs there too), and the host's pip settings: the PIP_*/UV_*
variables and certificate variables, and the pip and uv configuration files shown
read-only, none holding a credential (the environment's rule: execution/sandbox.py).
"""

from __future__ import annotations

import configparser
import contextlib
import errno
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from lily_kernel.execution.environments import PythonEnvironment
from lily_kernel.host_files import open_folder, open_inside, read_inside
from lily_kernel.redaction import Redactor, is_secret_name, secret_values

__all__ = ["INSTALLS", "RunEnvironment", "make_installs", "pip_settings",
           "prepare_environment"]

INSTALLS = PurePosixPath(".lily/venv")  # in the workspace
_PTH = "_lily_environment.pth"
_PIP = '#!/bin/sh\nexec "$(dirname -- "$0")/python" -m pip "$@"\n'
# Variables that would send an install elsewhere than the workspace's environment, or
# its traffic elsewhere than the sandbox's way out.
_ELSEWHERE = frozenset({"PIP_PROXY", "PIP_TARGET", "PIP_PREFIX", "PIP_ROOT", "PIP_USER",
                        "PIP_BREAK_SYSTEM_PACKAGES", "UV_SYSTEM_PYTHON",
                        "UV_PROJECT_ENVIRONMENT", "UV_PYTHON"})
_CERTIFICATES = ("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
_MAX_CONFIG = 65536


@dataclass(frozen=True)
class RunEnvironment:
    """The session's Python as a run gets it: the kernel's environment, the interpreter
    runs start (the installs' when there are), the writable environment (None: none
    could be made), what is shown read-only, and the variables set."""

    environment: PythonEnvironment
    python: Path
    installs: Path | None
    shown: tuple[Path, ...] = ()
    variables: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> tuple[Path, ...]:
        """The folders put first on PATH."""
        first = [self.python.parent, self.environment.bin]
        return tuple(dict.fromkeys(first))

    def applied(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` (a run's, already without secrets) with these variables and PATH."""
        rest = [p for p in env.get("PATH", os.defpath).split(os.pathsep) if p]
        ours = [str(p) for p in self.path]
        return {**env, **self.variables,
                "PATH": os.pathsep.join([*ours, *(p for p in rest if p not in ours)])}


def pip_settings(environ: Mapping[str, str]) -> tuple[dict[str, str], tuple[Path, ...]]:
    """The host's pip and uv settings a run may see: variables (PIP_*, UV_*, the
    certificate ones; none naming or holding a credential, none sending installs
    elsewhere) and the configuration and certificate files that exist (resolved; a
    configuration file holding a credential is left out)."""
    redact = Redactor(secret_values(environ))
    variables = {
        key: value for key, value in environ.items()
        if (key.startswith(("PIP_", "UV_")) or key in _CERTIFICATES)
        and key not in _ELSEWHERE and not is_secret_name(key) and redact(value) == value}
    home = Path(environ.get("HOME") or os.path.expanduser("~"))
    config = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    configs = [home / ".pip" / "pip.conf", config / "pip" / "pip.conf",
               home / ".config" / "pip" / "pip.conf", config / "uv" / "uv.toml",
               home / ".config" / "uv" / "uv.toml"]
    if environ.get("PIP_CONFIG_FILE"):
        configs.append(Path(environ["PIP_CONFIG_FILE"]))
    if "XDG_CONFIG_HOME" in environ and config != home / ".config":
        variables["XDG_CONFIG_HOME"] = str(config)
    files = [p for p in configs if _clean(p, redact)]
    files += [Path(variables[k]) for k in ("PIP_CERT", *_CERTIFICATES) if k in variables]
    files += [c for p in files if p.name == "pip.conf" for c in _certificates(p)]
    return variables, tuple(dict.fromkeys(
        Path(os.path.realpath(p)) for p in files if p.is_absolute() and p.exists()))


def _clean(path: Path, redact: Redactor) -> bool:
    """Whether the file exists and holds nothing the redactor would hide."""
    try:
        text = path.read_bytes()[:_MAX_CONFIG].decode("utf-8", "replace")
    except OSError:
        return False
    return redact(text) == text


def _certificates(path: Path) -> list[Path]:
    """The `cert` files a pip.conf names (its client key, a secret, is not shown)."""
    parser = configparser.RawConfigParser()
    with contextlib.suppress(configparser.Error, OSError, UnicodeDecodeError):
        parser.read(path, encoding="utf-8")
    return [Path(os.path.expanduser(parser.get(s, "cert"))) for s in parser.sections()
            if parser.has_option(s, "cert")]


def _write(folder: int, name: str, text: str, mode: int = 0o644) -> None:
    """`text` as the whole of the file `name` of the open folder, unless it holds it."""
    data = text.encode()
    root = Path(f"/proc/self/fd/{folder}")
    with contextlib.suppress(OSError):
        if read_inside(root, name, len(data) + 1) == data:
            return
    fd = open_inside(root, name, os.O_WRONLY | os.O_CREAT)
    try:
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _link(folder: int, name: str, target: str) -> None:
    """The link `name` in the open folder pointing at `target` (a link elsewhere, or a
    file, is replaced; a folder there is an error)."""
    with contextlib.suppress(OSError):
        if os.readlink(name, dir_fd=folder) == target:
            return
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=folder)
    os.symlink(target, name, dir_fd=folder)


def make_installs(workspace: Path, environment: PythonEnvironment) -> Path | None:
    """The writable environment of `workspace` (resolved) over `environment`: the
    environment itself when it lies in the workspace, else `.lily/venv` made (or brought
    up to date) for it. None when it cannot be made (a link on the way, a read-only
    folder): runs then install nothing."""
    prefix = Path(os.path.realpath(environment.prefix))
    lilys = prefix == Path(os.path.realpath(sys.prefix))  # never written
    if prefix != workspace and prefix.is_relative_to(workspace) and not lilys:
        return prefix
    base = os.path.realpath(environment.interpreter)
    version = environment.version
    site = f"lib/python{version}/site-packages"
    config = (f"home = {os.path.dirname(base)}\ninclude-system-site-packages = false\n"
              f"version = {version}\nlily-over = {environment.prefix}\n")
    adds = "".join(f"import site; site.addsitedir({str(p)!r})\n"
                   for p in environment.site_packages)
    try:
        top = open_folder(workspace, INSTALLS, make=True)
        try:
            _write(top, "pyvenv.cfg", config)
            _write(top, ".gitignore", "# Made by Lily: packages installed for this "
                   "workspace (docs/execution.md)\n*\n")
            with contextlib.suppress(FileExistsError):
                os.symlink("lib", "lib64", dir_fd=top)
            bin_ = open_folder(Path(f"/proc/self/fd/{top}"), "bin", make=True)
            try:
                _link(bin_, "python", base)
                for name in ("python3", f"python{version}"):
                    _link(bin_, name, "python")
                if environment.has_pip:
                    for name in ("pip", "pip3", f"pip{version}"):
                        _write(bin_, name, _PIP, 0o755)
            finally:
                os.close(bin_)
            packages = open_folder(Path(f"/proc/self/fd/{top}"), site, make=True)
            try:
                _write(packages, _PTH, adds)
            finally:
                os.close(packages)
        finally:
            os.close(top)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EACCES, errno.EROFS,
                             errno.EPERM, errno.EISDIR, errno.ENOSPC, errno.EEXIST):
            raise
        return None
    return workspace / INSTALLS


def prepare_environment(environment: PythonEnvironment, workspace: Path,
                        environ: Mapping[str, str]) -> RunEnvironment:
    """What a run in `workspace` (resolved) gets of `environment`, its installs made."""
    installs = make_installs(workspace, environment)
    python = environment.interpreter
    if installs is not None and installs != Path(os.path.realpath(environment.prefix)):
        python = installs / "bin" / "python"
    variables, files = pip_settings(environ)
    variables["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"  # it would reach for the index
    if installs is not None:
        variables["VIRTUAL_ENV"] = str(installs)
    return RunEnvironment(environment, python, installs,
                          (*environment.shown, *files), variables)
