"""The kernel's start path stays light: no litellm, no openai, no debugpy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.kernel.conftest import kernel_env

START = """
import json, sys
from lily_kernel.kernel.kernel import LilyKernel
kernel = LilyKernel()
kernel._starting.result(timeout=60)
info = kernel.kernel_info
print(json.dumps({
    "started": kernel.runtime is not None,
    "features": info["supported_features"],
    "heavy": sorted({m.split(".")[0] for m in sys.modules} & {"litellm", "openai", "debugpy"}),
}))
"""


def test_starting_a_session_and_answering_kernel_info_imports_nothing_heavy(
    tmp_path: Path,
) -> None:
    env = kernel_env(tmp_path / "home", LILY_WORKSPACE=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", START], env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"started": True, "features": [], "heavy": []}
