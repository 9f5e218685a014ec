"""Fixtures that several files of tests/integration/ use."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from support.openai_stub import StubServer
from support.postgres import INSTALL_HINT, find_bin_dir, running_postgres


@pytest.fixture
def stub_server() -> Iterator[Callable[..., StubServer]]:
    """Start a :class:`support.openai_stub.StubServer` with these keywords, stopped when the test ends:
    ``srv = stub_server(token_delay_s=0.05)``; as many as the test wants."""
    with ExitStack() as started:
        def start(**kw: Any) -> StubServer:
            return started.enter_context(StubServer(**kw))

        yield start


@pytest.fixture(scope="session")
def postgres() -> Iterator[Any]:
    """A throwaway PostgreSQL server for the session (support.postgres): skipped where its binaries are missing,
    a failure under CI (where `make install` puts them)."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and PostgreSQL's initdb/pg_ctl are missing: {INSTALL_HINT}")
        pytest.skip(f"PostgreSQL's initdb/pg_ctl are not installed ({INSTALL_HINT})")
    with running_postgres(bin_dir) as server:
        yield server
