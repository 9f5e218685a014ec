"""The queueing and preemption limits "stay under" their threshold: the largest swept concurrency with every point
at or below it clean (quantities/kv.py). A fresh-clone CI run measured cpu-tiny adaptively and got queue/E2E of
1: 0.0 of 187 ms, 2: 0.0 of 191, 4: 0.0 of 153, 8: 0.0 of 206, 16: 63.9 of 235 (27%: queued), 32: 55.6 of 792
(7%: its 41 early finishers never queued); the old rule, the largest clean point anywhere, said 32 against
max_num_seqs 8 and failed the prediction."""

from __future__ import annotations

from pytest_roofline.format.spec import Prediction, Spec
from pytest_roofline.quantities.kv import _last_before_first_failure
from pytest_roofline.scoring import Verdict

CI_ROWS = [(1, 0.0, 187.0), (2, 0.0, 191.0), (4, 0.0, 153.0), (8, 0.0, 206.0), (16, 63.9, 235.0), (32, 55.6, 792.0)]


def test_a_clean_point_above_the_knee_does_not_lift_the_limit() -> None:
    rows = [(c, q <= 0.10 * e2e) for c, q, e2e in CI_ROWS]
    assert [ok for _, ok in rows] == [True, True, True, True, False, True]
    assert _last_before_first_failure(rows) == 8


def test_order_of_the_rows_does_not_matter_and_the_edges() -> None:
    assert _last_before_first_failure([(32, True), (8, True), (16, False), (1, True)]) == 8
    assert _last_before_first_failure([(1, True), (2, True), (4, True)]) == 4  # never queued: the largest swept
    assert _last_before_first_failure([(1, False), (2, True)]) == 0  # queued from the first point
    assert _last_before_first_failure([]) == 0


# ---- a figure that is only a lower bound never fails on what the sweep did not reach ------------------------------
def _cpu_tiny_saturation(ink: str | None = None, tolerance: str | None = None) -> tuple[Spec, Prediction]:
    """cpu-tiny's spec and its ``saturation`` prediction (max_concurrency_without_queueing, the model's 8, exact),
    with ``ink`` in place of ``predicted: model`` and ``tolerance`` in place of ``exact`` when given."""
    from support.paths import CPU_TINY

    from pytest_roofline.format.spec import loads_spec

    text = CPU_TINY.read_text()
    if ink is not None:
        old = "quantity: max_concurrency_without_queueing\n    predicted: model\n"
        assert old in text
        text = text.replace(old, f"quantity: max_concurrency_without_queueing\n    predicted: {ink}\n")
    if tolerance is not None:
        old = f"quantity: max_concurrency_without_queueing\n    predicted: {ink or 'model'}\n    tolerance: exact\n"
        assert old in text
        text = text.replace(old, old.replace("tolerance: exact", f"tolerance: {tolerance}"))
    spec = loads_spec(text, file=str(CPU_TINY))
    (pred,) = [p for p in spec.predictions if p.id == "saturation"]
    return spec, pred


def _recording(first: int | None = None, status: str = "interrupted") -> dict:
    """cpu-tiny's recorded run (no queueing through C = 8, queued from 16), cut to its first ``first`` points as
    an interrupted live run leaves it."""
    import copy
    import json

    from support.paths import RECORDED

    data = json.loads((RECORDED / "cpu-tiny-2026-12-05.results.json").read_text())
    if first is not None:
        data = copy.deepcopy(data)
        data["points"] = data["points"][:first]
        data["status"] = status
    return data


def _score(spec: Spec, pred: Prediction, data: dict) -> Verdict:
    from pytest_roofline.measure.results import RecordedMeasurement
    from pytest_roofline.scoring import score

    return score(spec, pred, "measured", RecordedMeasurement(data))


def test_an_interrupted_sweep_cut_to_its_first_point_leaves_saturation_inconclusive_not_failed() -> None:
    spec, pred = _cpu_tiny_saturation()
    assert _score(spec, pred, _recording()).status == "pass"  # the whole sweep: queued from 16, so exactly 8
    v = _score(spec, pred, _recording(first=1))
    # before: FAIL, "measured 1 vs 8 (-87.5%)", though its own note called the figure a lower bound
    assert v.status == "inconclusive", v.reason
    assert v.measured_value == 1 and v.measured_lo == 1 and v.measured_hi is None
    assert "a point above C = 1 would decide" in v.interval_text
    assert any("none above it was measured" in n for n in v.measured_notes)


def test_a_lower_bound_above_the_ink_still_fails_and_one_below_it_is_undecided() -> None:
    cut = _recording(first=3)  # C = 1, 2, 4: none queued
    spec, pred = _cpu_tiny_saturation("2")
    v = _score(spec, pred, cut)
    assert v.status == "fail" and v.measured_value == 4  # the limit is 4 or more: above the ink's 2 whatever follows
    spec, pred = _cpu_tiny_saturation("16")
    assert _score(spec, pred, cut).status == "inconclusive"
    # a sweep that ran to its end without queueing gives a lower bound too: the grid stops before the deciding point
    assert _score(spec, pred, _recording(first=4, status="complete")).status == "inconclusive"
    # a point that queued decides it: exactly 8, a miss of the ink's 16
    assert _score(spec, pred, _recording()).status == "fail"


def test_a_lower_bound_equal_to_the_ink_is_undecided_and_says_what_would_decide() -> None:
    """C = 1, 2, 4 without queueing: the limit is 4 or more. Ink 4 (exact): the bound equals it, but the limit may be
    8 or 16, so it is inconclusive, never a pass; the reason says a sweep point above 4 decides, not more requests.
    Ink ">= 2" (open above) is a pass: every value the bound allows is in the band."""
    cut = _recording(first=3)
    spec, pred = _cpu_tiny_saturation("4")
    v = _score(spec, pred, cut)
    assert v.status == "inconclusive", v.reason
    assert "is a lower bound" in v.reason and "a sweep point above it would decide" in v.reason
    assert v.requests_to_decide is None
    spec, pred = _cpu_tiny_saturation("2", tolerance="'>= 2'")
    assert _score(spec, pred, cut).status == "pass"


def test_the_preemption_limit_is_a_lower_bound_the_same_way() -> None:
    from pytest_roofline.measure.results import RecordedMeasurement
    from pytest_roofline.quantities import registry as qreg
    from pytest_roofline.quantities.analysis import Thresholds

    q = qreg.get_quantity("max_concurrency_without_preemption")
    assert q.measure is not None
    clean = q.measure(RecordedMeasurement(_recording(first=2)), {}, None, Thresholds())  # type: ignore[arg-type]
    assert clean.value == 2 and clean.interval is not None and clean.interval["lo"] == 2
    assert clean.interval["hi"] is None
    data = _recording(first=3)
    data["points"][2]["server"]["preemptions"] = 5  # preempted at C = 4: the limit is exactly 2
    preempted = q.measure(RecordedMeasurement(data), {}, None, Thresholds())  # type: ignore[arg-type]
    assert preempted.value == 2 and preempted.interval is None

