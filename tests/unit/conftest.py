"""tests/unit/: every test here runs in this process alone. A test that starts a process or opens a socket fails
with a message saying where it belongs (tests/integration/), so the folder's promise stays true."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.hf_cache import QWEN25_14B_ID, QWEN25_14B_INSTRUCT, lay_out


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


@pytest.fixture
def hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Hugging Face cache laid out on disk (support.hf_cache) holding Qwen/Qwen2.5-14B-Instruct's config.json,
    with the Hub offline and no token: a model named by its Hub id resolves from it, never from the network."""
    cache = tmp_path / "hf-cache"
    lay_out(cache, QWEN25_14B_ID, {"config.json": QWEN25_14B_INSTRUCT})
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return cache
