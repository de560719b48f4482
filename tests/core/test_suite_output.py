"""The suite's own output: no test writes past pytest's capture into its progress line."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.slow  # a pytest run of its own over the whole corpus (~35 s)
def test_the_corpus_test_keeps_the_progress_line_whole() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/core/test_corpus.py"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:]
    assert re.fullmatch(r"[.s]+ +\[100%\]", done.stdout.splitlines()[0]), done.stdout[:500]
