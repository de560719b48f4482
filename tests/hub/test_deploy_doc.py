"""docs/deploy.md shows the JupyterHub config the hub test runs, word for word."""

from __future__ import annotations

import re

from tests.conftest import REPO
from tests.hub.hub import DOCUMENTED_CONFIG


def test_the_documented_hub_config_is_the_tested_file() -> None:
    doc = (REPO / "docs" / "deploy.md").read_text(encoding="utf-8")
    section = doc.split("\n## JupyterHub\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert blocks == [DOCUMENTED_CONFIG.read_text(encoding="utf-8")]
