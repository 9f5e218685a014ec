"""One rule decides "a prefix-cache-flattered point" (quantities.analysis.cache_hit_reason): the point a chart rings
is the point the verdict that uses it flags as contaminated (issue 19: the charts rang by one predicate, the
verdicts flagged by another, and day 3's C=1 point, whose TTFT p50 of 23 ms beats the ~54 ms compute floor of its
1,024-token prefill, was ringed but not flagged)."""

from __future__ import annotations

import json

from support.paths import DAY3, DAY3_RESULTS

from pytest_roofline.format.spec import load_spec
from pytest_roofline.measure.results import RecordedMeasurement
from pytest_roofline.quantities.analysis import closed_points, is_flattered
from pytest_roofline.quantities.measurement import concurrency
from pytest_roofline.report import charts as ch
from pytest_roofline.report.environment import spec_setup
from pytest_roofline.scoring import score

RECORDED = json.loads(DAY3_RESULTS.read_text())


def test_the_point_the_chart_rings_is_the_point_the_verdict_flags() -> None:
    spec = load_spec(DAY3)
    setup = spec_setup(spec)
    svg = ch.throughput_chart(spec, setup, RECORDED, []).svg
    assert "C=1: " in svg and "C=1: " in svg.split("contaminated (prefix-cache hits)")[0]  # ringed
    c1 = next(p for p in spec.predictions if p.id == "throughput-c1")
    v = score(spec, c1, "measured", RecordedMeasurement(RECORDED))
    assert v.contaminated, v.measured_notes  # flagged (was False: the verdict read the hit rate alone)


def test_every_single_point_verdict_flags_what_the_charts_ring() -> None:
    spec = load_spec(DAY3)
    setup = spec_setup(spec)
    ringed = {float(concurrency(p)) for p in closed_points(RECORDED) if is_flattered(p, spec.thresholds, setup)}
    assert 1.0 in ringed
    seen = 0
    for pred in spec.predictions:
        c = pred.at.get("concurrency")
        if pred.error is not None or pred.q.measure is None or c is None or pred.quantity == "littles_law_ratio":
            continue  # Little's law is an identity: cache hits do not bias it, and it flags nothing
        v = score(spec, pred, "measured", RecordedMeasurement(RECORDED))
        if v.status == "error" or len(v.measured_points) != 1:
            continue
        seen += 1
        assert v.contaminated == (float(c) in ringed), (pred.id, v.measured_notes)
    assert seen >= 5
