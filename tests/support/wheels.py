"""A pure-Python wheel as a build backend makes one (its module, METADATA, WHEEL and a
RECORD with their hashes), and the PEP 503 page that links it, for the loopback package
indexes of the tests and benchmarks."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

__all__ = ["build_wheel", "link_wheel"]


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(folder: Path, name: str, version: str = "1.0",
                source: bytes = b"VALUE = 42\n") -> Path:
    """The wheel of one package `name` whose `__init__.py` is `source`, in `folder`."""
    info = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": source,
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                 .encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: lily-tests\n"
                              b"Root-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{path},sha256={_digest(data)},{len(data)}" for path, data in files.items()]
    files[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


def link_wheel(index: Path, name: str, wheel: Path, files_url: str = "") -> None:
    """`index`'s simple page for `name` (`simple/<name>/index.html`), linking `wheel` with
    its sha256 at `files_url` + `/files/` (another host, as PyPI's pages link
    files.pythonhosted.org), or on the index's own host."""
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    page = index / "simple" / name / "index.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(f'<a href="{files_url}/files/{wheel.name}#sha256={digest}">{wheel.name}</a>\n')
