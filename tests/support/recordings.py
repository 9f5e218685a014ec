"""The CPU-engine recordings committed under predictions/recorded/ (one results file per prediction file)."""

from __future__ import annotations

from typing import Any

import pytest

from support.paths import RECORDED

#: the prediction files recorded on the CPU engine on 2026-12-05 (held load generator), by stem
RECORDINGS = ["cpu-tiny", "cpu-prefill-heavy", "cpu-kv-pressure", "cpu-open-loop"]


def recording_path(name: str):  # noqa: ANN201
    return RECORDED / f"{name}-2026-12-05.results.json"


def load_recording(name: str) -> Any:
    """The recording of ``predictions/NAME.yaml``, read through ``load_results`` (skips when it is absent)."""
    from pytest_roofline.measure.results import load_results

    path = recording_path(name)
    if not path.exists():
        pytest.skip(f"{path.name} not recorded")
    return load_results(path)


#: the same four files recorded on 2026-12-01 by a starved load generator (the engine in a session of its own:
#: docs/how-to/nightly.md). Nothing is scored on them; tests whose subject is the history, the trend page or a
#: results file's robustness use cpu-tiny's as a real file with real flaws (points that did not hold their
#: concurrency, outputs merged into bursts), and those flaws are what they check against.
STARVED_DATE = "2026-12-01"


def starved_recording_path(name: str):  # noqa: ANN201
    return RECORDED / f"{name}-{STARVED_DATE}.results.json"
