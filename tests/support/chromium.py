"""Debian's Chromium for the browser tests: where it is, how it starts, why it may be missing.

No browser is ever downloaded (`playwright install` is never run): Playwright drives
the system's `/usr/bin/chromium`, which `test.sh` installs with apt when it is missing.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "chromium_missing_reason"]

CHROMIUM = Path(os.environ.get("LILY_CHROMIUM", "/usr/bin/chromium"))

# Root needs --no-sandbox; the rest keep Chromium off the network (its background
# updaters, sync and QUIC probes) and off /dev/shm, which is small in containers.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-first-run", "--disable-quic",
]


def chromium_missing_reason() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        return (f"no Chromium at {CHROMIUM}: install Debian's package "
                "(apt-get install -y chromium; ./test.sh does it when it can)")
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the playwright package is missing: ./setup.sh installs the test extra"
    return None
