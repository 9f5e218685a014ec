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


#: the GPU prefill-bound class as the bands had it with one public source (gpustack-qwen3-bursts, bands.json before
#: 2026-12-07): no band, the range its 13 values showed (measured / model)
ONE_SOURCE_PREFILL_RANGES = {
    "output_throughput_tok_per_s|*|gpu-prefill": (0.2131, 0.9767),
    "tpot_p50_ms|*|gpu-prefill": (0.9817, 3.177),
    "ttft_p50_ms|*|gpu-prefill": (1.041, 7.4879),
}


@pytest.fixture
def prefill_one_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """The committed bands with the GPU prefill-bound class as it was with one public source: its bands dropped and
    the range that source showed in their place (``unbanded``), so the no-band path a class with too few sources
    takes is tested whatever the corpus holds now."""
    from pytest_roofline.model import bands

    doc = dict(bands._load_doc())
    doc["bands"] = {k: v for k, v in dict(doc.get("bands", {})).items()  # type: ignore[call-overload]
                    if "gpu-prefill" not in k and not k.endswith("|prefill")}
    doc["unbanded"] = {k: {"lo": lo, "hi": hi, "n": 13, "sources": ["gpustack-qwen3-bursts"], "pooled": True,
                           "half_width_log": 0.0} for k, (lo, hi) in ONE_SOURCE_PREFILL_RANGES.items()}
    monkeypatch.setattr(bands, "_load_doc", lambda: doc)
    bands.load_bands.cache_clear()
    bands.load_observed_ranges.cache_clear()
    yield
    monkeypatch.undo()
    bands.load_bands.cache_clear()
    bands.load_observed_ranges.cache_clear()
