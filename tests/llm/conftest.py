"""What the model-path tests share: one loopback server speaking the OpenAI chat API for
each module (tests/support/openai_server.py), scripted by the module's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.openai_server import OpenAIServer


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as srv:
        yield srv
