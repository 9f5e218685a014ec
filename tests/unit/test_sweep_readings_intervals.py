"""Sweep-level readings (the TTFT knee, goodput, goodput_concurrency) respect the 95% intervals of the percentiles
they read (trial s16 M3), and output_throughput / per_request_throughput are taken at an open-loop rate (M2).

The closed-loop recording is the trial's run2 (tests/data/s17/closed-c1-4-16.results.json: C = 1, 4, 16 with 3, 12
and 48 requests, 128 in / 64 out). The expected readings below are worked out by hand from the intervals the file
records (``points[].client.intervals``), quoted beside each assertion.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from support.paths import DATA, RECORDED
from support.specs import t3_closed_probe_head

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.measure.results import RecordedMeasurement
from pytest_roofline.scoring import Verdict, score

CLOSED = DATA / "s17" / "closed-c1-4-16.results.json"



def _verdict(prediction: str, data: dict[str, Any] | None = None, *, ttft: str = "50 ms",
             tpot: str = "3 ms") -> Verdict:
    spec = loads_spec(t3_closed_probe_head(ttft=ttft, tpot=tpot) + prediction, file="probe.yaml")
    (pred,) = spec.predictions
    return score(spec, pred, "measured", RecordedMeasurement(data or _closed()))


def _closed() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(CLOSED.read_text())
    return data


def _point(data: dict[str, Any], c: int) -> dict[str, Any]:
    (pt,) = [p for p in data["points"] if p.get("concurrency") == c]
    return pt


# ---- the TTFT knee -------------------------------------------------------------------------------------------------
def test_a_knee_reading_resting_on_unbounded_p99s_is_inconclusive_not_failed() -> None:
    """p99/p50 by the estimates: 1.2×, 1.9×, 1.3× (none above 2: "none"). But C = 4's p99 is from 12 requests, its
    interval [53.52 ms, +∞) against 2 × p50's [22.56, 41.22] = [45.1, 82.4] ms: either side of the 2× threshold; C = 1
    (3 requests) has no p50 interval at all. Before: FAIL "predicted 16, measured gives none"."""
    v = _verdict("  - {id: tk, quantity: ttft_knee_concurrency, predicted: 16, tolerance: exact}\n")
    assert v.status == "inconclusive", v.reason
    assert v.measured_value is None
    undecided = next(n for n in v.measured_notes if "undecided" in n)
    assert "C = 4: p99 [53.52, +∞] ms against 2 × p50 [22.56, 41.22] ms (12 requests)" in undecided
    assert "it may be C = 1, 4, 16 or none" in undecided


def test_a_knee_whose_points_are_decided_reads_as_before() -> None:
    """The same points with intervals tight enough to decide: C = 1 below (p99 [10, 14] ≤ 2 × p50 [8, 9] = 16),
    C = 4 above (p99 [90, 100] > 2 × p50 [25, 30] = 60): the knee is 4 by the intervals and by the estimates."""
    data = copy.deepcopy(_closed())
    iv = {1: ((8.0, 9.0, 8.5), (10.0, 14.0, 12.0)), 4: ((25.0, 30.0, 28.0), (90.0, 100.0, 95.0))}
    for c, ((lo50, hi50, e50), (lo99, hi99, e99)) in iv.items():
        client = _point(data, c)["client"]
        client["ttft_ms"]["p50"], client["ttft_ms"]["p99"] = e50, e99
        client["intervals"]["ttft_ms.p50"].update(estimate=e50, lo=lo50, hi=hi50)
        client["intervals"]["ttft_ms.p99"].update(estimate=e99, lo=lo99, hi=hi99)
    v = _verdict("  - {id: tk, quantity: ttft_knee_concurrency, predicted: 4, tolerance: exact}\n", data)
    assert (v.status, v.measured_value) == ("pass", 4), v.reason
    assert not any("undecided" in n for n in v.measured_notes)
    assert _verdict("  - {id: tk, quantity: ttft_knee_concurrency, predicted: 16, tolerance: exact}\n",
                    data).status == "fail"


def test_a_knee_estimate_between_undecided_points_carries_their_interval() -> None:
    """C = 4 above by its estimate (95 > 2 × 28) but undecided (p99 [50, +∞) against 2 × p50 [25, 30] = [50, 60]):
    the knee is 4 by the estimates and may be 4, 16 or none by the intervals (C = 1 has no p50 interval either):
    the reading carries the open interval (0, +∞) between the swept concurrencies around them, so ink 4 exact
    cannot pass."""
    data = copy.deepcopy(_closed())
    client = _point(data, 4)["client"]
    client["ttft_ms"]["p50"], client["ttft_ms"]["p99"] = 28.0, 95.0
    client["intervals"]["ttft_ms.p50"].update(estimate=28.0, lo=25.0, hi=30.0)
    client["intervals"]["ttft_ms.p99"].update(estimate=95.0, lo=50.0, hi=None)
    v = _verdict("  - {id: tk, quantity: ttft_knee_concurrency, predicted: 4, tolerance: exact}\n", data)
    assert v.measured_value == 4
    assert v.status == "inconclusive", v.reason
    assert v.measured_lo == 0 and v.measured_hi is None


# ---- goodput (the best point meeting the SLOs at the percentile) ---------------------------------------------------
def test_goodput_none_decided_by_the_intervals_still_fails() -> None:
    """SLO 50 ms / 3 ms at p90: every point surely misses one: C = 1 TPOT p90 ≥ 4.23 ms, C = 4 TPOT p90 ≥ 5.38 ms,
    C = 16 TTFT p90 ≥ 197.1 ms (lower bounds above the SLO), so "none" is decided and the FAIL stands."""
    v = _verdict("  - {id: gp, quantity: goodput, predicted: 1000 tok/s}\n")
    assert (v.status, v.measured_value) == ("fail", None), v.reason
    assert not any("undecided" in n for n in v.measured_notes)
    assert any("no point meets them" in n for n in v.measured_notes)


def test_goodput_decided_by_a_point_that_surely_meets_the_slos() -> None:
    """SLO 250 ms / 10 ms: C = 16 surely meets them (TTFT p90 [197.1, 221.7], TPOT p90 [2.71, 3.29]) at 2,920.5
    tok/s; C = 1 and 4 are undecided (no upper bound) but slower, so they cannot be the best: decided."""
    v = _verdict("  - {id: gp, quantity: goodput, predicted: 2900 tok/s}\n", ttft="250 ms", tpot="10 ms")
    assert v.status == "pass", v.reason
    assert v.measured_value == pytest.approx(2920.53, abs=0.01)
    assert not v.interval


def test_goodput_and_its_concurrency_undecided_are_inconclusive() -> None:
    """SLO 210 ms / 10 ms: C = 16's TTFT p90 [197.1, 221.7] straddles 210 (its estimate 221.6 misses), C = 1 and 4
    have no upper bound: by the estimates the best is C = 4 (809.8 tok/s), but C = 16 (2,920.5) may meet the SLOs
    too. goodput carries [0, 2,920.5] tok/s (none surely meets), so 800 tok/s ±10% is INCONCLUSIVE, and the
    concurrency may be 1, 4, 16 or none."""
    v = _verdict("  - {id: gp, quantity: goodput, predicted: 800 tok/s}\n", ttft="210 ms", tpot="10 ms")
    assert v.measured_value == pytest.approx(809.83, abs=0.01)
    assert v.status == "inconclusive", v.reason
    assert v.measured_lo == 0 and v.measured_hi == pytest.approx(2920.53, abs=0.01)
    undecided = next(n for n in v.measured_notes if "undecided" in n)
    assert "C = 16: TTFT p90 [197.1, 221.7] ms against its 210 ms SLO (48 requests)" in undecided
    c = _verdict("  - {id: gpc, quantity: goodput_concurrency, predicted: 4, tolerance: exact}\n", ttft="210 ms",
                 tpot="10 ms")
    assert c.measured_value == 4 and c.status == "inconclusive", c.reason


# ---- output_throughput at an open-loop rate (M2) -------------------------------------------------------------------
def test_output_throughput_is_taken_at_an_open_loop_rate() -> None:
    """cpu-open-loop's 8 req/s point: 120 measured requests of 64 output tokens in 13.6414 s = 563.0 tok/s. The
    roofline model has no batch at a rate and says so; the serving model predicts it."""
    text = (RECORDED.parent / "cpu-open-loop.yaml").read_text()
    spec = loads_spec(text.split("\npredictions:")[0] + "\npredictions:\n"
                      "  - {id: ot, quantity: output_throughput, at: {rate: 8 req/s}, predicted: 560 tok/s}\n"
                      "  - {id: prt, quantity: per_request_throughput, at: {rate: 8 req/s}, predicted: model}\n",
                      file=str(RECORDED.parent / "cpu-open-loop.yaml"))
    data = json.loads((RECORDED / "cpu-open-loop-2026-12-05.results.json").read_text())
    ot, prt = spec.predictions
    v = score(spec, ot, "measured", RecordedMeasurement(data))
    assert v.measured_value == pytest.approx(120 * 64 / 13.64138470099715, rel=1e-9)
    assert v.status in ("pass", "inconclusive"), v.reason
    m = score(spec, ot, "math", None)
    assert "open-loop rate names neither" in (m.model_text + m.reason)
    assert score(spec, prt, "measured", RecordedMeasurement(data)).measured_value is not None



def test_an_ink_of_none_against_an_undecided_none_is_inconclusive_with_the_undecided_points_in_its_notes() -> None:
    """Trial s25c #2: an ink of none against a measured none the intervals leave undecided passed, where a numeric
    ink was INCONCLUSIVE; now both are, the readings still possible in the reason, the points in the notes (C = 1's
    p50 has no bound at all)."""
    v = _verdict("  - {id: tk, quantity: ttft_knee_concurrency, predicted: none}\n")
    assert v.status == "inconclusive" and v.measured_value is None
    assert "their 95% intervals leave it undecided: it may also be 1" in v.reason
    assert any("C = 1: p99 [12.98, +∞] ms against 2 × p50 [−∞, +∞] ms (3 requests)" in n for n in v.measured_notes)
