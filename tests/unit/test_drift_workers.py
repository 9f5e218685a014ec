"""What an xdist worker is sent of the index (``runs_drift_reads``) gives the verdicts the whole index gives
(trial 21, H1: the newest ``window*3`` runs per setup lost the nights' spread, a pinned run of any age and, for a
replay, the runs before its measurement time)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from pytest_roofline.history import DriftPolicy, RunSummary, SetupKey, StoredValue, drift_for, runs_drift_reads

SETUP = SetupKey("cpu", "roofline-tiny", "0.32.0")
OTHER = SetupKey("h100-sxm5-80gb", "roofline-tiny", "0.32.0")
KEYS = [f"predictions/x.yaml::p{i}" for i in range(4)]


def _value(key: str, measured: float | None, *, held: bool = True) -> StoredValue:
    return StoredValue(key=key, prediction_id=key.rsplit("::", 1)[1], file="predictions/x.yaml",
                       quantity="ttft_p50", dimension="time", status="pass", mode="measured", unit="ms",
                       measured=measured, predicted=100.0, lo=90.0, hi=110.0, predicted_text="100 ms",
                       definition_hash="h" + key[-1], unheld_points=() if held else ("concurrency=4",))


def _store(seed: int) -> list[RunSummary]:
    """40 nights of two setups; a prediction is missing on some nights, measured at an unheld point on others."""
    rnd = random.Random(seed)
    runs = []
    for n in range(40):
        values = []
        for key in KEYS:
            r = rnd.random()
            if r < 0.3:
                continue  # not measured that night
            values.append(_value(key, 100.0 * rnd.uniform(0.6, 1.6), held=r > 0.4))
        day, hour = divmod(n, 2)
        runs.append(RunSummary(run_id=f"202611{day + 1:02d}T{hour * 12:02d}0000Z-c{n}-{seed:06d}",
                               setup=SETUP if rnd.random() < 0.8 else OTHER,
                               started_at=f"2026-11-{day + 1:02d}T{hour * 12:02d}:00:00Z", mode="replay",
                               values=tuple(values), measurements=(f"m{n}",)))
    return runs


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("baseline", ["previous", "median:3", "median:8", "run:20261103T000000Z"])
@pytest.mark.parametrize("replay_of", [None, 7, 25])
def test_the_workers_runs_give_the_serial_verdicts(seed: int, baseline: str, replay_of: int | None) -> None:
    runs = _store(seed)
    policy = DriftPolicy("10%", baseline)
    before = measurement = None
    if replay_of is not None:  # a replay of a stored night: the runs before it, never itself
        before, measurement = runs[replay_of].started_at, f"m{replay_of}"
    sent = runs_drift_reads(runs, policy, before=before, measurement=measurement)
    now = [_value(k, 100.0 * (1.1 + i / 10)) for i, k in enumerate(KEYS)]
    for setup in (SETUP, OTHER):
        whole = drift_for(now, runs, policy, setup=setup, before=before, measurement=measurement)
        part = drift_for(now, sent, policy, setup=setup, before=before, measurement=measurement)
        assert {k: d.to_dict() for k, d in part.items()} == {k: d.to_dict() for k, d in whole.items()}
    if replay_of is None and baseline == "previous":
        assert len(sent) < len(runs)  # still a part of a long history, not all of it


def test_a_pinned_run_of_any_age_is_sent() -> None:
    runs = _store(3)
    sent = runs_drift_reads(runs, DriftPolicy("10%", "run:20261101T000000Z"))
    assert "20261101T000000Z-c0-000003" in {r.run_id for r in sent}


def test_an_old_scheme_store_is_sent_whole() -> None:
    runs = _store(5)
    old = [replace(r, values=tuple(replace(v, definition_hash="") for v in r.values)) for r in runs]
    assert runs_drift_reads(old, DriftPolicy()) == old
