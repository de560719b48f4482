"""Not collected by the suite (no test_ prefix): tests/core/test_suite_layers.py runs it
in a pytest of its own to see the layers' watch fail a run (tests/support/layers.py)."""

from __future__ import annotations

import asyncio
import contextlib

from jupyter_client.provisioning.local_provisioner import LocalProvisioner


def test_starts_a_kernel_without_the_slow_mark() -> None:
    # The watch charges the start, then the launch itself fails at once (no provisioner).
    with contextlib.suppress(Exception):
        asyncio.run(LocalProvisioner.launch_kernel(None, []))  # type: ignore[arg-type]


def test_starts_nothing() -> None:
    assert True
