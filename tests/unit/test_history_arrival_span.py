"""An open-loop value is read at a load its schedule defines (``sweep.arrival_span``, model/workload.py): the same
rate sent over exactly N ÷ rate (``fixed``, the default since 2026-12-07) or as the draw fell (``drawn``, every
earlier run) is another figure. The history keeps the span beside the value; drift calls a night that changed it
``prediction changed`` (``arrivals changed``), never drifted, and leaves nights of the other span out of its
baseline and spread; ``roofline compare`` does not judge such a pair."""

from __future__ import annotations

from dataclasses import replace

from pytest_roofline.history import (
    DriftPolicy,
    DriftStatus,
    RunSummary,
    SetupKey,
    StoredValue,
    changed_badge,
    compare_runs,
    drift_for,
    prediction_key,
    value_arrival_span,
)
from pytest_roofline.history._store import _check_value

SETUP = SetupKey("cpu", "roofline-tiny", "0.32.0")
AT = {"rate": "4"}
KEY = prediction_key("open.yaml", "rate-low", AT)


def _value(measured: float, span: str | None) -> StoredValue:
    return StoredValue(key=KEY, prediction_id="rate-low", file="open.yaml", quantity="request_throughput",
                       dimension="request_rate", status="pass", mode="measured", at=dict(AT), unit="req/s",
                       measured=measured, predicted_text="4 req/s", definition_hash="h1", window="run",
                       arrival_span=span)


def _night(day: int, *values: StoredValue) -> RunSummary:
    return RunSummary(run_id=f"202612{day:02d}T020000Z-nocommit-{day:06x}", setup=SETUP,
                      started_at=f"2026-12-{day:02d}T02:00:00Z", mode="engine", values=values)


def test_the_span_of_a_values_points_is_read_from_its_results_file():
    own = {"source": "measured", "points": [
        {"id": "open-r4", "mode": "open", "arrival_span": "fixed"},
        {"id": "open-r8", "mode": "open"},  # a point written before the field: sent drawn
        {"id": "closed-c4", "mode": "closed"}]}
    assert value_arrival_span(own, ["open-r4"]) == "fixed"
    assert value_arrival_span(own, ["open-r8"]) == "drawn"
    assert value_arrival_span(own, ["open-r4", "open-r8"]) == "mixed"
    assert value_arrival_span(own, ["closed-c4"]) is None  # a closed loop has no schedule
    peer = {**own, "source": "vllm bench serve"}
    assert value_arrival_span(peer, ["open-r8"]) is None  # a peer's file that does not say: not known
    assert value_arrival_span(peer, ["open-r4"]) == "fixed"


def test_a_value_stored_before_spans_were_kept_at_a_rate_point_was_sent_drawn():
    assert _value(3.9, None).open_loop_span() == "drawn"
    assert _value(3.9, "fixed").open_loop_span() == "fixed"
    closed = replace(_value(3.9, None), at={"concurrency": "4"})
    assert closed.open_loop_span() is None
    assert replace(_value(3.9, None), mode="math", measured=None).open_loop_span() is None
    # stored and read back (a store line keeps it; a line without it reads None)
    d = _value(3.9, "fixed").to_dict()
    _check_value(d)
    assert StoredValue.from_dict(d).arrival_span == "fixed"
    assert StoredValue.from_dict({k: v for k, v in d.items() if k != "arrival_span"}).arrival_span is None


def test_the_night_that_changed_the_span_is_arrivals_changed_never_drifted():
    # three drawn nights at 4.6 req/s (the drawn schedule sent 4.6), tonight fixed at 3.95: -14 %, beyond 10 %, and
    # the nights' spread is 0, so with the same span it would be drifted
    nights = [_night(d, _value(4.6, None)) for d in (1, 2, 3)]
    assert drift_for([_value(3.95, "drawn")], nights, DriftPolicy(), setup=SETUP)[KEY].status is DriftStatus.DRIFTED
    d = drift_for([_value(3.95, "fixed")], nights, DriftPolicy(), setup=SETUP)[KEY]
    assert d.status is DriftStatus.PREDICTION_CHANGED and d.changed == ("arrivals",)
    assert changed_badge(d) == "arrivals changed"
    assert "its open-loop point was sent on the fixed schedule, where it was sent drawn" in d.text
    assert "not judged as drift: the prediction changed since" in d.text and "beyond 10%" not in d.text
    # not judged, so not judged against noise either (trial s23 L2: "beyond 10% but within the earlier nights'
    # spread" of the other span's nights): the move is said, and no threshold verdict (trial s24c L9)
    assert "-14.1% vs" in d.text and "beyond 10%" not in d.text
    assert "spread" not in d.text and "noise" not in d.text and "intervals" not in d.text


def test_nights_of_the_other_span_are_neither_the_baseline_nor_the_spread():
    drawn = [_night(d, _value(x, None)) for d, x in ((1, 4.6), (2, 4.1), (3, 4.9))]
    fixed = [_night(d, _value(x, "fixed")) for d, x in ((4, 3.95), (5, 3.96), (6, 3.94))]
    runs = drawn + fixed
    # the median of the last 5 nights: only the three fixed ones count (3.95), so 3.95 tonight is steady
    d = drift_for([_value(3.95, "fixed")], runs, DriftPolicy(baseline="median:5"), setup=SETUP)[KEY]
    assert d.status is DriftStatus.STEADY and d.baseline == 3.95
    assert len(d.baseline_run_ids) == 3
    # a real move of the fixed figure, -13.7 % (3.40 against the previous night's 3.94), beyond the default 10 % and
    # the fixed nights' tiny spread: drifted; with the drawn nights in the spread (4.1..4.9) it would not have been
    moved = drift_for([_value(3.40, "fixed")], runs, DriftPolicy(), setup=SETUP)[KEY]
    assert moved.status is DriftStatus.DRIFTED, moved.text
    mixed = [_night(d, _value(x, "fixed")) for d, x in ((1, 4.6), (2, 4.1), (3, 4.9), (4, 3.95), (5, 3.96),
                                                          (6, 3.94))]
    assert drift_for([_value(3.40, "fixed")], mixed, DriftPolicy(), setup=SETUP)[KEY].status is DriftStatus.UNCERTAIN


def test_compare_does_not_judge_a_pair_sent_on_two_spans():
    a, b = _night(1, _value(4.6, None)), _night(2, _value(3.95, "fixed"))
    (row,) = compare_runs(a, b)
    assert row.significance == "arrivals"
    (same,) = compare_runs(_night(1, _value(3.95, "fixed")), b)
    assert same.significance == "same"
