"""Fixtures that several files of tests/integration/ use."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from support.openai_stub import StubServer


@pytest.fixture
def stub_server() -> Iterator[Callable[..., StubServer]]:
    """Start a :class:`support.openai_stub.StubServer` with these keywords, stopped when the test ends:
    ``srv = stub_server(token_delay_s=0.05)``; as many as the test wants."""
    with ExitStack() as started:
        def start(**kw: Any) -> StubServer:
            return started.enter_context(StubServer(**kw))

        yield start
