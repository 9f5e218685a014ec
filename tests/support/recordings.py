"""The CPU-engine recordings committed under predictions/recorded/ (one results file per prediction file)."""

from __future__ import annotations

from typing import Any

import pytest

from support.paths import RECORDED

#: the prediction files recorded on the CPU engine on 2026-12-01, by stem
RECORDINGS = ["cpu-tiny", "cpu-prefill-heavy", "cpu-kv-pressure", "cpu-open-loop"]


def recording_path(name: str):  # noqa: ANN201
    return RECORDED / f"{name}-2026-12-01.results.json"


def load_recording(name: str) -> Any:
    """The recording of ``predictions/NAME.yaml``, read through ``load_results`` (skips when it is absent)."""
    from pytest_roofline.measure.results import load_results

    path = recording_path(name)
    if not path.exists():
        pytest.skip(f"{path.name} not recorded")
    return load_results(path)
