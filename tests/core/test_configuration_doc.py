"""docs/configuration.md against config.py: every lily.yaml key has its row, with its
variable and default, and the lists of what an untrusted lily.yaml may do with a key are
the keys' own `spec(untrusted=...)`."""

from __future__ import annotations

import re
from dataclasses import MISSING, fields
from pathlib import Path

import pytest

from lily_kernel.config import LilyConfig, ModelConfig, NetworkConfig, ToolsConfig
from lily_kernel.validation import field_keys, field_spec

DOC = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
# The bullet of each rule (`**lower**: ...`), up to the next bullet.
BULLETS = {"fixed": "**fixed**", "local": "**local only**", "lower": "**lower**",
           "on": "**on only**", "off": "**off only**", "fewer": "**fewer**"}


def _rows() -> dict[str, list[str]]:
    rows = {}
    for line in DOC.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| `") and len(cells) >= 4:
            rows[cells[0].strip("`")] = cells
    return rows


def _keys() -> list[str]:
    keys = [key for _, key, _ in field_keys(LilyConfig) if key not in ("tools", "network")]
    return keys + [f"tools.{f.name}" for f in fields(ToolsConfig)] + [
        f"network.{f.name}" for f in fields(NetworkConfig)]


def test_every_key_has_its_row_and_variable() -> None:
    rows = _rows()
    assert len(_keys()) > 30
    missing = [key for key in _keys() if key not in rows]
    assert missing == []
    for key in _keys():
        variable = rows[key][1]
        if key == "mcp_servers":  # a mapping: no variable
            assert variable == "—"
            continue
        assert f"`LILY_{key.upper().replace('.', '_')}`" in variable, key


@pytest.mark.parametrize("cls", [LilyConfig, ModelConfig])
def test_every_number_defaulted_is_the_rows_default(cls: type) -> None:
    rows = _rows()
    for f in fields(cls):
        if f.default is MISSING or not isinstance(f.default, int | float) or isinstance(
                f.default, bool):
            continue
        shown = rows[f.name][2].replace(",", "")
        assert re.search(rf"\b{f.default:g}\b", shown), (f.name, f.default, shown)


def _said() -> dict[str, set[str]]:
    """The keys each rule's words name (`**lower**: ...`), up to the next rule's."""
    block = DOC[DOC.index("- **fixed**"):DOC.index("The rest (")]
    parts = re.split(r"\*\*([a-z ]+)\*\*", block)
    names = {label.strip("*"): rule for rule, label in BULLETS.items()}
    return {names[label]: set(re.findall(r"`([a-z_.]+)`", text))
            for label, text in zip(parts[1::2], parts[2::2], strict=True)}


def test_what_an_untrusted_file_may_do_is_each_keys_spec() -> None:
    said = _said()
    assert set(said) == set(BULLETS)
    for cls in (LilyConfig, ModelConfig, NetworkConfig):
        for f in fields(cls):
            spec = field_spec(cls, f.name)
            if spec.get("untrusted"):
                assert (spec.get("label") or f.name) in said[spec["untrusted"]], f.name
    assert said["lower"] >= {"python_timeout", "script_timeout", "memory_limit_mb"}
