"""The "Lily" kernelspec: shipped in the environment, and `lily install` for other places."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import pytest
from jupyter_client.kernelspec import KernelSpecManager

from lily_kernel.cli.install import kernelspec_source
from lily_kernel.cli.main import main

LOGOS = {"logo-32x32.png": 32, "logo-64x64.png": 64}


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _check_spec_folder(folder: Path) -> dict[str, object]:
    for name, size in LOGOS.items():
        assert _png_size(folder / name) == (size, size)
    assert (folder / "logo-svg.svg").read_text().lstrip().startswith(("<svg", "<?xml"))
    spec: dict[str, object] = json.loads((folder / "kernel.json").read_text())
    assert spec["display_name"] == "Lily" and spec["language"] == "lily"
    assert spec["interrupt_mode"] == "signal"
    # -P: the notebook's folder is never on sys.path (its yaml.py would shadow Lily's);
    # nor through an empty or relative PYTHONPATH part, which Python reads as that folder.
    argv = spec["argv"]
    assert argv[1:3] == ["-P", "-c"] and argv[4:] == ["-f", "{connection_file}"]  # type: ignore[index]
    assert "runpy.run_module('lily_kernel'" in argv[3]  # type: ignore[index]
    return spec


def test_the_environment_has_the_lily_kernelspec() -> None:
    spec = KernelSpecManager().get_kernel_spec("lily")
    assert spec.display_name == "Lily" and spec.language == "lily"
    _check_spec_folder(Path(spec.resource_dir))
    assert kernelspec_source().is_dir()


def test_lily_install_prefix_copies_the_spec_with_this_python(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["install", "--prefix", str(tmp_path)]) == 0
    folder = tmp_path / "share" / "jupyter" / "kernels" / "lily"
    assert str(folder) in capsys.readouterr().out
    spec = _check_spec_folder(folder)
    assert spec["argv"][0] == sys.executable  # type: ignore[index]
    # Installing again replaces the copy cleanly.
    assert main(["install", "--prefix", str(tmp_path)]) == 0
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["kernel.json", "logo-32x32.png", "logo-64x64.png", "logo-svg.svg"])
