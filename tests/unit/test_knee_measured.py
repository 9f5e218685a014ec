"""The measured throughput knee where the sweep stops before the throughput flattens. A trial replayed a real
``vllm bench serve`` sweep that stops at C=4 (tests/data/peers/cpu-tiny-vllm-bench) against cpu-tiny.yaml, whose
sweep runs to 32 and whose knee is 8 in 2..16: the points show no knee up to 4, and "measured none" FAILed a knee
the file never reached. C=4's doubling was never run, so a knee at 4 or above is neither confirmed nor refuted."""

from __future__ import annotations

from support.paths import CPU_TINY, PEERS

from pytest_roofline.format.spec import load_spec, loads_spec
from pytest_roofline.measure.results import RecordedMeasurement
from pytest_roofline.measure.results.peers import load_any
from pytest_roofline.scoring import Verdict, score

HEAD = CPU_TINY.read_text().split("predictions:")[0]


def _knee(ink: str, tolerance: str) -> Verdict:
    tol = f"    tolerance: {tolerance}\n" if tolerance else ""
    spec = loads_spec(HEAD + f"predictions:\n  - id: k\n    quantity: knee_concurrency\n    predicted: {ink}\n"
                      + tol, file=str(CPU_TINY))
    assert spec.predictions[0].error is None, spec.predictions[0].error
    return score(spec, spec.predictions[0], "measured", RecordedMeasurement(load_any(PEERS / "cpu-tiny-vllm-bench")))


def test_a_knee_the_points_never_reached_is_inconclusive_with_the_point_that_would_decide() -> None:
    data = load_any(PEERS / "cpu-tiny-vllm-bench")
    assert sorted(p["concurrency"] for p in data["points"]) == [1, 2, 4]  # gains +98 %, +90 %: still rising
    spec = load_spec(CPU_TINY)
    (pred,) = [p for p in spec.predictions if p.id == "knee"]  # 8, 2..16
    v = score(spec, pred, "measured", RecordedMeasurement(data))
    assert v.measured_value is None and v.status == "inconclusive", v.reason
    assert "no knee up to C = 4" in v.reason and "a point at C = 8 would decide" in v.reason
    assert _knee("4", "exact").status == "inconclusive"  # C=4's own doubling was never run


def test_a_knee_below_the_measured_points_still_fails_and_none_still_passes() -> None:
    # 1→2 and 2→4 were both measured and both gained ~90 %: a knee at 1 or 2 is refuted
    assert _knee("2", "exact").status == "fail"
    assert _knee("2", "1..3").status == "fail"
    assert _knee("none", "").status == "pass"  # no knee up to 4: "none" agrees as far as the file goes
