"""The Python environment a session's runs use: which folders it is, found from its
interpreter, whatever its layout (a venv anywhere, a conda environment, a pyenv version,
pyenv-virtualenv's venvs, Lily's own).

`find_environment` asks the interpreter once for its prefixes (`python -I -c …`, in a
sandbox of its own: the host read-only, no network, no capabilities), and keeps the
answer for as long as the interpreter and its `pyvenv.cfg` are unchanged. A venv's
`bin/python` is a link to its base interpreter: the environment is the venv's folder
(`sys.prefix`), not the folder the link resolves to; both are shown read-only to runs.
`environment_interpreter` reads what `python_kernel` names when it is a path (an
interpreter, or an environment's folder) instead of a kernelspec's name.
"""

from __future__ import annotations

import json
import os
import site
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

from lily_kernel.errors import ToolError

__all__ = ["PythonEnvironment", "environment_interpreter", "find_environment",
           "lilys_environment", "names_a_path"]

# What the interpreter says of itself: its prefixes, version, site folders, whether it
# has ipykernel and pip. `-I`: no user site, no PYTHON* variables, no working folder.
_PROBE = (
    "import json, site, sys\n"
    "from importlib.util import find_spec\n"
    "print(json.dumps({'prefix': sys.prefix, 'base_prefix': sys.base_prefix,\n"
    "  'exec_prefix': sys.exec_prefix, 'base_exec_prefix': sys.base_exec_prefix,\n"
    "  'version': '%d.%d' % sys.version_info[:2],\n"
    "  'site': site.getsitepackages() if hasattr(site, 'getsitepackages') else [],\n"
    "  'ipykernel': find_spec('ipykernel') is not None,\n"
    "  'pip': find_spec('pip') is not None}))\n")
_PROBE_TIMEOUT = 60.0  # a loaded machine's cold start of a large environment
_cache: dict[str, tuple[tuple[float, ...], PythonEnvironment]] = {}


@dataclass(frozen=True)
class PythonEnvironment:
    """An interpreter and the environment it runs in: `interpreter` as named (a venv's
    is a link to its base's: never resolved here), `prefix` its environment's folder
    (`sys.prefix`), `base_prefix` the installation it was made from, `site_packages`
    where its packages are (the base's too when the venv includes them)."""

    interpreter: Path
    prefix: Path
    base_prefix: Path
    version: str  # "3.12"
    site_packages: tuple[Path, ...] = ()
    has_ipykernel: bool = True
    has_pip: bool = True
    exec_prefixes: tuple[Path, ...] = ()

    @property
    def bin(self) -> Path:
        """The folder of its commands (`python`, `pip`, what its packages installed)."""
        return self.interpreter.parent

    @property
    def shown(self) -> tuple[Path, ...]:
        """What a run must see of it, read-only: its folder, its base installation, the
        folder its interpreter's link resolves into, each resolved."""
        folders = [self.prefix, self.base_prefix, *self.exec_prefixes,
                   Path(os.path.realpath(self.interpreter)).parent.parent,
                   *self.site_packages]
        return tuple(dict.fromkeys(Path(os.path.realpath(f)) for f in folders))


def lilys_environment() -> PythonEnvironment:
    """The environment Lily itself runs in (never written: installs go elsewhere)."""
    return PythonEnvironment(
        Path(sys.executable), Path(sys.prefix), Path(sys.base_prefix),
        "{}.{}".format(*sys.version_info[:2]), tuple(map(Path, site.getsitepackages())),
        has_ipykernel=True, has_pip=find_spec("pip") is not None,
        exec_prefixes=(Path(sys.exec_prefix), Path(sys.base_exec_prefix)))


def names_a_path(value: str) -> bool:
    """Whether `python_kernel` names an interpreter or an environment's folder (a
    path: `~/.venvs/ds`, `.venv`, `/opt/conda/envs/ds/bin/python`), not a kernelspec."""
    return "/" in value or value.startswith(("~", "."))


def environment_interpreter(value: str, workspace: Path | None,
                            environ: Mapping[str, str]) -> Path:
    """The interpreter `value` names: itself, or an environment folder's `bin/python`
    (`~` is the person's home, a relative path the workspace's). Not resolved: a venv's
    interpreter is a link, and the venv is where it lies. Raises ToolError."""
    home = environ.get("HOME") or os.path.expanduser("~")
    path = Path(home + value[1:]) if value == "~" or value.startswith("~/") else Path(value)
    if not path.is_absolute():
        path = (workspace or Path.cwd()) / path
    path = Path(os.path.normpath(path))
    if path.is_dir():
        found = next((path / "bin" / n for n in ("python", "python3")
                      if (path / "bin" / n).is_file()), None)
        if found is None:
            raise ToolError(f"python_kernel: no Python in '{value}' (no bin/python there; "
                            "name an environment's folder or its interpreter).")
        path = found
    elif not path.is_file():
        raise ToolError(f"python_kernel: '{value}' does not exist (name a kernelspec, an "
                        "environment's folder or its interpreter).")
    _not_a_script(path, value)
    return path


def _not_a_script(path: Path, value: str) -> None:
    """A pyenv shim (a shell script that finds the version at each call) cannot run in
    the sandbox: the interpreter itself is wanted."""
    try:
        with open(path, "rb") as handle:
            start = handle.read(2)
    except OSError as exc:
        raise ToolError(f"python_kernel: cannot read '{value}' ({exc.strerror}).") from None
    if start == b"#!":
        raise ToolError(f"python_kernel: '{value}' is a script, not a Python interpreter "
                        "(a pyenv shim? `pyenv which python` names the interpreter).")


def _signature(interpreter: Path) -> tuple[float, ...]:
    """What changes when the environment is remade: the interpreter and its venv file."""
    marks = []
    for path in (interpreter, interpreter.parent.parent / "pyvenv.cfg"):
        try:
            info = path.stat()
            marks += [info.st_mtime, float(info.st_ino)]
        except OSError:
            marks += [0.0, 0.0]
    return tuple(marks)


def find_environment(interpreter: Path, bwrap: str) -> PythonEnvironment:
    """The environment `interpreter` runs in, asked once (in bubblewrap `bwrap`: the
    host read-only, no network), kept while it is unchanged. Raises ToolError when the
    interpreter does not answer as Python does."""
    key, signature = str(interpreter), _signature(interpreter)
    kept = _cache.get(key)
    if kept is not None and kept[0] == signature:
        return kept[1]
    import subprocess  # with the kernel's first start

    from lily_kernel.execution.sandbox import probe_argv

    try:
        done = subprocess.run(
            probe_argv(bwrap, [str(interpreter), "-I", "-c", _PROBE]),
            capture_output=True, text=True, timeout=_PROBE_TIMEOUT, check=False,
            env={"PATH": os.defpath, "LANG": "C.UTF-8"}, stdin=subprocess.DEVNULL)
        said = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        said = None
    if not isinstance(said, dict):
        raise ToolError(f"python_kernel: '{interpreter}' did not answer as Python does "
                        "(is it a Python interpreter that runs on this machine?).")
    found = PythonEnvironment(
        interpreter, Path(said["prefix"]), Path(said["base_prefix"]), str(said["version"]),
        tuple(Path(p) for p in said.get("site", ()) if isinstance(p, str)),
        has_ipykernel=bool(said.get("ipykernel")), has_pip=bool(said.get("pip")),
        exec_prefixes=(Path(said["exec_prefix"]), Path(said["base_exec_prefix"])))
    _cache[key] = (signature, found)
    return found
