"""Drift and a point that did not hold its concurrency (issue 21): tonight's value at such a point is uncertain,
an earlier night's is no baseline and no part of the nights' spread. Numbers worked out by hand."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from support.history_index import drop_index_column

from pytest_roofline.history import (
    DirectoryStore,
    DriftPolicy,
    DriftStatus,
    RunSummary,
    SetupKey,
    StoredValue,
    build_records,
    drift_for,
    open_store,
    stored_value,
)
from pytest_roofline.measure.stats import unheld_points

SETUP = SetupKey("cpu", "roofline-tiny", "0.32.0")
KEY = "p.yaml::tput-c4::concurrency=4"
FLAG = ("concurrency not held: 2.23 of 4 requests in flight on average (56%), below 90%: the load generator was slow "
        "to send the next request (a starved client machine). The point measured a lower load than its concurrency "
        "says")


def value(measured: float, *, unheld: tuple[str, ...] = (), predicted_text: str = "1,000 tok/s") -> StoredValue:
    # no interval: an exact value, so the within-run test is |now − base| > 0 and only the threshold and the nights'
    # spread decide
    return StoredValue(key=KEY, prediction_id="tput-c4", file="p.yaml", quantity="output_throughput",
                       dimension="throughput", status="pass", mode="measured", at={"concurrency": "4"}, unit="tok/s",
                       measured=measured, predicted_text=predicted_text, definition_hash="h", unheld_points=unheld)


def night(day: int, measured: float, *, unheld: tuple[str, ...] = ()) -> RunSummary:
    return RunSummary(run_id=f"202611{day:02d}T020000Z-c{day}-aaaaaa", setup=SETUP,
                      started_at=f"2026-11-{day:02d}T02:00:00Z", mode="engine",
                      values=(value(measured, unheld=unheld),))


def one(now: StoredValue, nights: list[RunSummary], policy: DriftPolicy | None = None):
    return drift_for([now], nights, policy or DriftPolicy("10%"), setup=SETUP)[KEY]


# --------------------------------------------------------------------------- recording: notes -> unheld_points


def test_the_points_are_read_from_the_verdicts_notes() -> None:
    notes = [f"point closed-c8: {FLAG}", "point closed-c4: TTFT p50 3 ms is below the 9.0 ms compute floor",
             f"point closed-c4: {FLAG}", f"point closed-c8: {FLAG}", "concurrency not held: no 'point' head", 7]
    # c8 first (its note came first), once; the compute-floor note and the headless one are not held flags
    assert unheld_points(notes) == ("closed-c8", "closed-c4")
    assert unheld_points([]) == ()


def test_a_stored_value_keeps_its_unheld_points_and_a_held_one_none() -> None:
    verdict = {"id": "tput-c4", "status": "inconclusive", "mode": "measured", "quantity": "output_throughput",
               "dimension": "throughput", "measured_value": 1000.0, "at": {"concurrency": 4},
               "measured_notes": [f"point closed-c4: {FLAG}"]}
    sv = stored_value(verdict, file="p.yaml")
    assert sv.unheld_points == ("closed-c4",) and not sv.held
    held = stored_value({**verdict, "measured_notes": []}, file="p.yaml")
    assert held.unheld_points == () and held.held


def test_a_scored_verdict_on_an_unheld_point_is_stored_as_unheld() -> None:
    # end to end through scoring: the notebook's C=16 p99 TTFT with its point (closed-c16) flagged as held 1.32 of 16
    import copy

    from support.paths import DAY3_RESULTS
    from support.specs import DAY3_TTFT_C16

    from pytest_roofline.format.spec import loads_spec
    from pytest_roofline.measure.results import RecordedMeasurement
    from pytest_roofline.measure.stats import held_flag
    from pytest_roofline.scoring import score

    recorded = json.loads(DAY3_RESULTS.read_text())
    spec = loads_spec(DAY3_TTFT_C16)
    (pred,) = spec.predictions
    assert stored_value(score(spec, pred, "measured", RecordedMeasurement(recorded)).to_dict(),
                        file="p.yaml").held
    data = copy.deepcopy(recorded)
    for p in data["points"]:
        if p["id"] == "closed-c16":
            p["flags"] = [*(p.get("flags") or []), held_flag({"steady_mean_in_flight": 1.32}, 16, None)]
    sv = stored_value(score(spec, pred, "measured", RecordedMeasurement(data)).to_dict(), file="p.yaml")
    assert sv.unheld_points == ("closed-c16",)
    assert sv.measured == pytest.approx(0.546)  # the value is kept: nothing measured is lost


def test_build_records_and_both_stores_keep_it_and_an_old_line_reads_as_held(tmp_path) -> None:
    (tmp_path / ".git").mkdir()
    f = str(tmp_path / "p.yaml")
    verdict = {"id": "tput-c4", "file": f, "status": "inconclusive", "mode": "measured",
               "quantity": "output_throughput", "dimension": "throughput", "measured_value": 1000.0,
               "at": {"concurrency": 4}, "measured_notes": [f"point closed-c4: {FLAG}"]}
    (rec,) = build_records([verdict], setups={f: SETUP}, started_at="2026-11-30T02:00:00Z", mode="engine")
    assert rec.summary.values[0].unheld_points == ("closed-c4",)
    store = DirectoryStore(tmp_path / "store")
    stored = store.add(rec)
    (again,) = DirectoryStore(tmp_path / "store").runs(SETUP)
    assert again.values[0].unheld_points == ("closed-c4",) and not again.values[0].held
    assert DirectoryStore(tmp_path / "store").load(stored.run_id).summary.values[0].unheld_points == ("closed-c4",)
    run_json = json.loads(next((tmp_path / "store").rglob("run.json")).read_text())
    assert run_json["values"][0]["unheld_points"] == ["closed-c4"]
    # an index line written before the field was kept (no "unheld_points" column) reads as held
    drop_index_column(tmp_path / "store", "unheld_points")
    (old,) = DirectoryStore(tmp_path / "store").runs(SETUP)
    assert old.values[0].unheld_points == () and old.values[0].held and old.values[0].measured == 1000.0
    # an SQL store (SQLite here; PostgreSQL keeps the same summary JSON in its row) keeps it too
    sql = open_store(f"sqlite:///{tmp_path / 'h.db'}")
    try:
        sql.add(rec)
        (row,) = sql.runs(SETUP)
        assert row.values[0].unheld_points == ("closed-c4",)
    finally:
        sql.close()


@pytest.mark.parametrize("bad", ["closed-c4", [1], {"closed-c4": 1}])
def test_a_damaged_unheld_points_is_a_corrupt_line(bad: object) -> None:
    from pytest_roofline.errors import HistoryError
    from pytest_roofline.history._store import summary_from_json, summary_to_json

    d = summary_to_json(night(30, 1000.0, unheld=("closed-c4",)), compact=True)
    assert summary_from_json(d, "line 1").values[0].unheld_points == ("closed-c4",)
    d["values"]["rows"][0][d["values"]["fields"].index("unheld_points")] = bad
    with pytest.raises(HistoryError, match="unheld_points is not a list of point ids"):
        summary_from_json(d, "line 1")


# --------------------------------------------------------------------------- drift


def test_tonight_unheld_is_uncertain_never_drifted() -> None:
    # 1,000 → 1,500 tok/s: +50 %, beyond 10 %, exact values: drifted when the point held (three earlier nights)
    assert one(value(1500.0), [night(x, 1000.0) for x in (28, 29, 30)]).status is DriftStatus.DRIFTED
    nights = [night(30, 1000.0)]
    d = one(value(1500.0, unheld=("closed-c4",)), nights)
    assert d.status is DriftStatus.UNCERTAIN
    assert d.change_rel == pytest.approx(0.5) and d.baseline == 1000.0
    assert d.text == ("+50.0% vs previous run (2026-11-30; baseline 1,000 tok/s), not judged: point closed-c4 did not "
                      "hold its concurrency in this run (a lower load than the prediction names; see the verdict's "
                      "notes)")


def test_tonight_unheld_is_uncertain_never_steady() -> None:
    # 1,000 → 1,020: +2 %, within 10 %: steady when held, uncertain when not (a lower load may read the same)
    nights = [night(30, 1000.0)]
    assert one(value(1020.0), nights).status is DriftStatus.STEADY
    d = one(value(1020.0, unheld=("closed-c4", "closed-c8")), nights)
    assert d.status is DriftStatus.UNCERTAIN
    assert "not judged: points closed-c4, closed-c8 did not hold their concurrency in this run" in d.text


def test_an_unheld_earlier_night_is_no_baseline() -> None:
    # nights: 29th 1,000 (held), 30th 700 (unheld). Tonight 1,049: against the held 1,000 it is +4.9 %, within
    # ±5 %: steady. Had the 30th been the baseline: (1049 − 700) / 700 = +49.9 %, drifted
    nights = [night(29, 1000.0), night(30, 700.0, unheld=("closed-c4",))]
    d = one(value(1049.0), nights, DriftPolicy("±5%"))
    assert d.status is DriftStatus.STEADY
    assert d.baseline == 1000.0 and d.baseline_run_ids == ("20261129T020000Z-c29-aaaaaa",)
    assert d.text == ("+4.9% vs previous run (2026-11-29; 1 earlier night skipped: its point did not hold its "
                      "concurrency; baseline 1,000 tok/s), within ±5%")
    held_30 = [night(29, 1000.0), night(30, 700.0)]
    assert one(value(1049.0), held_30, DriftPolicy("±5%")).change_rel == pytest.approx(349 / 700)


def test_unheld_nights_are_left_out_of_the_median_and_the_nights_spread() -> None:
    # nights 26th 1,000, 27th 1,010, 28th 990 (held) and 29th 5,000 (unheld). median:5 → the three held ones:
    # median 1,000; their sd: deviations 0, +10, −10 → √(200 / 2) = 10; spread = t(0.975, 2) · 10 · √(1 + 1/3) =
    # 4.302653 · 10 · 1.154701 = 49.68 tok/s. Tonight 1,200: +20 %, beyond 10 %, 200 > 49.68: drifted.
    # With the 29th in: median of 4 = (1000 + 1010) / 2 = 1,005 and sd 2,000.0 → a spread of ~6,000: uncertain
    nights = [night(26, 1000.0), night(27, 1010.0), night(28, 990.0), night(29, 5000.0, unheld=("closed-c4",))]
    d = one(value(1200.0), nights, DriftPolicy("10%", "median:5"))
    assert d.status is DriftStatus.DRIFTED
    assert d.baseline == 1000.0 and len(d.baseline_run_ids) == 3
    assert d.noise == pytest.approx(4.302653 * 10 * math.sqrt(4 / 3), rel=1e-5)
    assert d.text.startswith("+20.0% vs median of 3 runs (2026-11-26..28; 1 earlier night skipped: its point did "
                             "not hold its concurrency; baseline 1,000 tok/s), beyond 10%")
    all_held = [replace(n, values=(replace(n.values[0], unheld_points=()),)) for n in nights]
    was = one(value(1200.0), all_held, DriftPolicy("10%", "median:5"))
    assert was.status is DriftStatus.UNCERTAIN and was.baseline == 1005.0


def test_only_unheld_earlier_nights_make_it_new() -> None:
    nights = [night(29, 1000.0, unheld=("closed-c4",)), night(30, 990.0, unheld=("closed-c4",))]
    d = one(value(1500.0), nights)
    assert d.status is DriftStatus.NEW
    assert d.text == ("new: no earlier run on this setup measured it at a point that held its concurrency (2 earlier "
                      "nights skipped: their points did not hold their concurrency)")
    tonight_too = one(value(1500.0, unheld=("closed-c4",)), nights)
    assert tonight_too.status is DriftStatus.NEW
    assert tonight_too.text.endswith("; point closed-c4 did not hold its concurrency in this run (a lower load than "
                                     "the prediction names; see the verdict's notes)")


def test_a_pinned_run_whose_point_did_not_hold_is_no_baseline() -> None:
    nights = [night(29, 1000.0), night(30, 700.0, unheld=("closed-c4",))]
    d = one(value(1500.0), nights, DriftPolicy("10%", "run:20261130"))
    assert d.status is DriftStatus.NEW
    assert d.text == ("new: the pinned run 20261130 measured it at a point that did not hold its concurrency, so it "
                      "is no baseline")
    # against the held pinned run: +50 %, but 1 of 3 earlier held nights: uncertain; with two more held nights, drifted
    assert one(value(1500.0), nights, DriftPolicy("10%", "run:20261129")).status is DriftStatus.UNCERTAIN
    more = [night(27, 1000.0), night(28, 1000.0), *nights]
    assert one(value(1500.0), more, DriftPolicy("10%", "run:20261129")).status is DriftStatus.DRIFTED


def test_an_edited_ink_at_an_unheld_point_is_uncertain_with_the_note() -> None:
    # an ink edit is a note (trial 14n, D8), so the unheld rule decides the status: uncertain, not judged
    d = one(value(1500.0, unheld=("closed-c4",), predicted_text="1,400 tok/s"), [night(30, 1000.0)])
    assert d.status is DriftStatus.UNCERTAIN
    assert "not judged: point closed-c4 did not hold its concurrency" in d.text
    assert d.text.endswith("the prediction's ink changed since (1,000 tok/s → 1,400 tok/s), which does not move the "
                           "measured value")


def test_a_value_not_judged_is_measured_but_not_compared() -> None:
    # two values tonight against one earlier night: one held (+2 %: steady), one at an unheld point (+50 %):
    # 1 compared of 2 measured, and the count line names the one not judged; the dict form keeps it
    from pytest_roofline.history import Drift, compared_count, drift_counts, not_judged_count

    nights = [night(30, 1000.0)]
    held = one(value(1020.0), nights)
    unheld = one(value(1500.0, unheld=("closed-c4",)), nights)
    assert held.held and not unheld.held
    assert compared_count([held, unheld]) == (1, 2) and not_judged_count([held, unheld]) == 1
    assert drift_counts([held, unheld]) == ("1 compared (1 steady), 1 not judged (their point did not hold its "
                                            "concurrency)")
    assert compared_count([held.to_dict(), unheld.to_dict()]) == (1, 2)
    assert not_judged_count([held.to_dict(), unheld.to_dict()]) == 1
    assert Drift.from_dict(unheld.to_dict()) == unheld
    # a drift stored before the field existed reads as held
    old = {k: v for k, v in held.to_dict().items() if k != "held"}
    assert Drift.from_dict(old).held and compared_count([old]) == (1, 1)


def test_roofline_compare_does_not_judge_a_move_at_a_point_that_did_not_hold() -> None:
    # 1,000 → 1,500 tok/s, exact values: "no interval" when both points held; "not held" (shown "not judged") when
    # B's did not, and not counted as compared in the JSON
    from pytest_roofline.history import compare_runs, comparison_json, render_comparison

    a = night(30, 1000.0)
    b_held = RunSummary(run_id="20261201T020000Z-c1-bbbbbb", setup=SETUP, started_at="2026-12-01T02:00:00Z",
                        mode="engine", values=(value(1500.0),))
    b_unheld = replace(b_held, values=(value(1500.0, unheld=("closed-c4",)),))
    (row,) = compare_runs(a, b_held)
    assert row.significance == "no interval"  # exact values keep no interval: the data cannot say
    (row,) = compare_runs(a, b_unheld)
    assert row.significance == "not held" and row.change_rel == pytest.approx(0.5)
    text = " ".join(render_comparison(a, b_unheld, [row]))
    assert "not judged" in text and "1 not judged (a point did not hold its concurrency in one run)" in text
    assert comparison_json(a, b_unheld, [row])["compared"] == 0
