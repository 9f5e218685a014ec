"""tests/unit/: every test here runs in this process alone. A test that starts a process or opens a socket fails
with a message saying where it belongs (tests/integration/), so the folder's promise stays true."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable
from typing import Any

import pytest


def _refuse(what: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a unit test {what}: tests/unit/ runs in-process only; move this test to "
                             "tests/integration/ (tests/README.md)")
    return refuse


@pytest.fixture(autouse=True)
def _in_process_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess.Popen, "__init__", _refuse("starts a process"))
    monkeypatch.setattr(socket.socket, "connect", _refuse("opens a network connection"))
    monkeypatch.setattr(socket.socket, "bind", _refuse("listens on a socket"))
