"""Install the "Lily" kernelspec (kernel.json and logos) into a Jupyter data folder.

`pip install` already puts it in the environment's `share/jupyter/kernels/lily` (wheel
shared data); `lily install` is for other places: `--user`, `--sys-prefix`, `--prefix`.
The installed kernel.json names this Python by its absolute path, so a Jupyter running
from another environment still starts Lily with the interpreter that has it installed.
"""

from __future__ import annotations

import json
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager

__all__ = ["KERNEL_NAME", "install_kernelspec", "kernelspec_source"]

KERNEL_NAME = "lily"
_CHECKOUT = Path(__file__).resolve().parents[2] / "kernelspec"


def kernelspec_source() -> Path:
    """The kernelspec folder: the source checkout's, else the installed wheel data."""
    candidates = [
        _CHECKOUT,
        Path(sysconfig.get_path("data")) / "share" / "jupyter" / "kernels" / KERNEL_NAME,
        Path(sys.prefix) / "share" / "jupyter" / "kernels" / KERNEL_NAME,
    ]
    for folder in candidates:
        if (folder / "kernel.json").is_file():
            return folder
    searched = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"Lily's kernelspec files are missing (looked in {searched}).")


def install_kernelspec(user: bool = False, sys_prefix: bool = False,
                       prefix: str | None = None) -> str:
    """Copy the kernelspec into Jupyter's kernels folder; returns where it went.

    With no option, installs system-wide (as `jupyter kernelspec install` does).
    """
    if sys_prefix:
        prefix = sys.prefix
    with tempfile.TemporaryDirectory() as tmp:
        # Copy first: the source may be the very folder being replaced (--sys-prefix).
        staged = Path(tmp) / KERNEL_NAME
        shutil.copytree(kernelspec_source(), staged)
        spec_file = staged / "kernel.json"
        spec = json.loads(spec_file.read_text(encoding="utf-8"))
        spec["argv"][0] = sys.executable
        spec_file.write_text(json.dumps(spec, indent=2) + "\n", encoding="utf-8")
        return KernelSpecManager().install_kernel_spec(
            str(staged), KERNEL_NAME, user=user, prefix=prefix
        )
