"""Supply-chain guards: litellm is the vetted pin, and no unexpected .pth file runs at start-up.

litellm 1.82.8 shipped a `.pth` file that ran code at every interpreter start; any new
`.pth` in site-packages fails this test until someone has looked at it.
"""

from __future__ import annotations

import importlib.metadata
import site
import sys
from pathlib import Path

# Distributions whose .pth files are known and harmless.
TRUSTED_OWNERS = {
    "setuptools",  # distutils-precedence.pth
    "coverage",  # a1_coverage.pth (coverage arrives with nbval)
    "lily-kernel",  # this project's editable install
}


def pth_owners() -> dict[str, str]:
    """Each .pth file name installed by a distribution, with that distribution's name."""
    owners = {}
    for dist in importlib.metadata.distributions():
        for file in dist.files or []:
            if str(file).endswith(".pth") and "/" not in str(file):
                owners[Path(str(file)).name] = dist.metadata["Name"].lower()
    return owners


def site_packages() -> list[Path]:
    paths = {Path(p) for p in site.getsitepackages()}
    paths.add(Path(site.getusersitepackages()))
    return sorted(p for p in paths if p.is_dir() and str(p).startswith(sys.prefix))


def test_no_unexpected_pth_files() -> None:
    found = {pth.name for root in site_packages() for pth in root.glob("*.pth")}
    assert found, "expected at least the editable-install .pth"
    owners = pth_owners()
    unexpected = sorted(f"{name} (from {owners.get(name, 'no installed package')})"
                        for name in found if owners.get(name) not in TRUSTED_OWNERS)
    assert unexpected == [], f"unexpected .pth files (check what they run): {unexpected}"


def test_litellm_is_the_vetted_version() -> None:
    assert importlib.metadata.version("litellm") == "1.105.3"
    files = importlib.metadata.files("litellm") or []
    assert not [f for f in files if str(f).endswith(".pth")]
