"""Which Jupyter kernel the session's Python runs in: a kernelspec the person names
(`python_kernel`, `LILY_PYTHON_KERNEL`: e.g. their data-science environment), an
interpreter or an environment's folder named by its path (`~/.venvs/ds`: no kernelspec
needed), or by default an IPython kernel of Lily's own environment. The environment the
interpreter runs in is found by asking it (execution/environments.py): a venv is its
own folder, not the base interpreter its `bin/python` links to.

Only Python kernels are taken (the tool is `python`), never Lily's own kernel, and the
kernel is always interrupted by message: in the sandbox's own PID namespace a signal
from outside does not reach it. Every kernel starts with Python's safe path (`-P` for
Lily's own, PYTHONSAFEPATH for any): its working folder is the workspace, whose own
`ipykernel_launcher.py` (or any module it holds) must not run in place of the kernel's.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lily_kernel.errors import ToolError
from lily_kernel.execution.environments import (
    PythonEnvironment,
    environment_interpreter,
    find_environment,
    lilys_environment,
    names_a_path,
)
from lily_kernel.execution.sandbox import search_path

__all__ = ["LILYS_OWN", "KernelChoice", "choose_kernel"]

LILYS_OWN = "Python (Lily's environment)"
# In every kernel's environment: Python (3.11 and later) puts no working folder on
# sys.path when it starts a module (`-m ipykernel_launcher`).
SAFE_PATH = {"PYTHONSAFEPATH": "1"}
_FIELD = re.compile(r"\{([A-Za-z0-9_]+)\}")


@dataclass(frozen=True)
class KernelChoice:
    """A kernel to start: its command line (with `{connection_file}`), its display
    name, the variables its kernelspec sets, and the environment its interpreter runs
    in (shown read-only in the sandbox; None: not known, its installation is shown)."""

    name: str  # the kernelspec's name, or the path named ("" for Lily's own)
    display_name: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    resource_dir: str = ""  # the kernelspec's folder
    environment: PythonEnvironment | None = None

    @property
    def installation(self) -> Path:
        """The folder the interpreter is installed in (`<prefix>` of `<prefix>/bin/python`)."""
        return Path(os.path.realpath(self.argv[0])).parent.parent

    def command(self, connection_file: str) -> list[str]:
        """Its command line, its fields filled in (as jupyter_client fills them)."""
        fields = {"connection_file": connection_file, "prefix": sys.prefix,
                  "resource_dir": self.resource_dir}
        return [_FIELD.sub(lambda m: fields.get(m[1], m[0]), part) for part in self.argv]

    def described(self) -> str:
        """Its display name, and its name where that does not say it already (a
        kernelspec `ds` shown "Python (ds)" is not "Python (ds) (ds)")."""
        if not self.name or self.name.lower() in self.display_name.lower():
            return self.display_name
        return f"{self.display_name} ({self.name})"


def _lilys_own() -> KernelChoice:
    return KernelChoice("", LILYS_OWN, (sys.executable, "-P", "-m", "ipykernel_launcher",
                                        "-f", "{connection_file}"), dict(SAFE_PATH),
                        environment=lilys_environment())


def _lacks_ipykernel(named: str, environment: PythonEnvironment) -> ToolError:
    return ToolError(
        f"python_kernel: the environment of '{named}' ({environment.prefix}) has no "
        "ipykernel, which a Jupyter kernel needs; add it there with "
        f"`{environment.interpreter} -m pip install ipykernel` and run again.")


def _by_path(value: str, workspace: Path | None, environ: Mapping[str, str],
             bwrap: str | None) -> KernelChoice:
    """The kernel of the interpreter or environment folder `value` names."""
    interpreter = environment_interpreter(value, workspace, environ)
    argv = (str(interpreter), "-m", "ipykernel_launcher", "-f", "{connection_file}")
    if bwrap is None:  # no sandbox: nothing runs, nothing is asked
        return KernelChoice(value, f"Python ({value})", argv, dict(SAFE_PATH))
    environment = find_environment(interpreter, bwrap)
    if not environment.has_ipykernel:
        raise _lacks_ipykernel(value, environment)
    return KernelChoice(value, f"Python {environment.version} ({value})", argv,
                        dict(SAFE_PATH), environment=environment)


def _of_kernelspec(argv: Sequence[str], name: str, bwrap: str | None
                   ) -> PythonEnvironment | None:
    """The environment of a kernelspec's interpreter, when its command starts one
    (None: not a Python by its name, or it does not answer as one)."""
    if bwrap is None or not Path(argv[0]).name.startswith("python"):
        return None
    try:
        environment = find_environment(Path(argv[0]), bwrap)
    except ToolError:
        return None
    if not environment.has_ipykernel and any("ipykernel" in part for part in argv):
        raise _lacks_ipykernel(name, environment)
    return environment


def choose_kernel(name: str | None, workspace: Path | None = None,
                  environ: Mapping[str, str] | None = None, bwrap: str | None = None
                  ) -> KernelChoice:
    """The kernel named `name`: a kernelspec Jupyter knows, an interpreter or an
    environment's folder (a path; a relative one is the workspace's), or Lily's own
    Python. With `bwrap`, the interpreter is asked where its environment is."""
    if not name:
        return _lilys_own()
    environ = os.environ if environ is None else environ
    if names_a_path(name):
        return _by_path(name, workspace, environ, bwrap)
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(name)
    except NoSuchKernel:
        raise ToolError(f"no Jupyter kernel named '{name}' (python_kernel); `jupyter "
                        "kernelspec list` shows the installed ones.") from None
    argv = list(spec.argv)
    if not argv:
        raise ToolError(f"the kernel '{name}' has no command line (its kernel.json).")
    if not (spec.language or "").lower().startswith("python"):
        raise ToolError(f"the kernel '{name}' runs {spec.language or 'an unknown language'}, "
                        "not Python (python_kernel).")
    if any("lily_kernel" in part for part in argv):
        raise ToolError(f"the kernel '{name}' is Lily itself; python_kernel names a Python "
                        "kernel such as `python3`.")
    if argv[0] in ("python", "python3"):  # a kernelspec that means this very Python
        argv[0] = sys.executable
    elif not os.path.isabs(argv[0]):
        found = shutil.which(argv[0], path=search_path(environ))
        if found is None:
            raise ToolError(f"the kernel '{name}' needs {argv[0]}, which is not installed.")
        argv[0] = found
    return KernelChoice(name, spec.display_name or name, tuple(argv),
                        {**(spec.env or {}), **SAFE_PATH}, spec.resource_dir,
                        _of_kernelspec(argv, name, bwrap))
