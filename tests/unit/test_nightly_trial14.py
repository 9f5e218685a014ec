"""Trial 14n's nightly defects (notes/s14/trial-nightly.md), the parts that are pure functions: checked with values
worked out by hand from the trial's stored nights."""

from __future__ import annotations

import dataclasses

from support.history_nights import POINTS

from pytest_roofline.errors import PointError, SpecError
from pytest_roofline.format.spec import loads_spec
from pytest_roofline.history import RunSummary, SetupKey, StoredValue, build_records, unify_keys
from pytest_roofline.history._records import prediction_key
from pytest_roofline.report.scorecard import score_spec
from pytest_roofline.scoring import Verdict

SETUP = SetupKey("cpu", "roofline-tiny", "0.32.0")


def _value(pid: str, at: dict[str, str], status: str, measured: float | None) -> StoredValue:
    return StoredValue(key=prediction_key("nightly.yaml", pid, at), prediction_id=pid, file="nightly.yaml",
                       quantity="output_throughput", dimension="throughput", status=status, mode="measured", at=at,
                       unit="tok/s", measured=measured, predicted=700.0, predicted_text="700 tok/s",
                       definition_hash="h" if measured is not None else "e")


def _night(hour: int, *values: StoredValue) -> RunSummary:
    return RunSummary(run_id=f"20261206T1{hour}0000Z-nocommit-aaaaaa", setup=SETUP,
                      started_at=f"2026-12-06T1{hour}:00:00Z", mode="engine", values=values)


# ------------------------------------------------------------------------------ D4: an errored night keeps its point


def test_an_error_verdict_keeps_its_at_point() -> None:
    # the engine did not start: every measured prediction is an ERROR, and its verdict keeps at: concurrency=2,
    # so the stored key is the prediction's own, nightly.yaml::tput[concurrency=2]::concurrency=2
    pred = loads_spec(POINTS, file="nightly.yaml").predictions[0]
    assert pred.id == "tput[concurrency=2]"
    v = Verdict.for_error(pred, PointError("api_server.py: error: unrecognized arguments: --swap-space"),
                          mode="measured")
    assert v.status == "error" and v.at == {"concurrency": "2"}
    (rec,) = build_records([v], setups={"nightly.yaml": SETUP}, started_at="2026-12-06T11:17:30Z", mode="engine")
    assert rec.summary.values[0].key == "nightly.yaml::tput[concurrency=2]::concurrency=2"


def test_every_error_path_keeps_the_at_point() -> None:
    # s14 review 1.11: Verdict.for_error itself keeps at:, so the other callers get it too: the plugin's
    # prediction-error path (collect.py, mode math) and the scorecard's score_spec (a prediction error; a point
    # error). The keys are the points' own: nightly.yaml::tput[concurrency=N]::concurrency=N, N = 2 and 4
    spec = loads_spec(POINTS, file="nightly.yaml")
    refused = [dataclasses.replace(p, error=SpecError("refused at load (a stand-in)", file="nightly.yaml", line=9))
               for p in spec.predictions]
    math = [Verdict.for_error(p, p.error, mode="math") for p in refused if p.error is not None]
    assert [v.at for v in math] == [{"concurrency": "2"}, {"concurrency": "4"}]
    card = score_spec(dataclasses.replace(spec, predictions=refused), None)
    assert [(v.status, v.at) for v in card] == [("error", {"concurrency": "2"}), ("error", {"concurrency": "4"})]
    (rec,) = build_records(card, setups={"nightly.yaml": SETUP}, started_at="2026-12-06T11:17:30Z", mode="math")
    assert [v.key for v in rec.summary.values] == ["nightly.yaml::tput[concurrency=2]::concurrency=2",
                                                   "nightly.yaml::tput[concurrency=4]::concurrency=4"]
    # a prediction without at: keeps {} (its key has no point)
    plain = loads_spec("hardware: cpu\nmodel: roofline-tiny\npredictions:\n"
                       "  - {id: kv, quantity: kv_bytes_per_token, predicted: 1 KiB}\n", file="p.yaml").predictions[0]
    assert Verdict.for_error(plain, PointError("x"), mode="measured").at == {}


def test_errors_stored_without_their_point_join_their_predictions_series() -> None:
    # the trial's store `he`: nights 1 and 2 keyed ...::concurrency=2, the failed night stored before this fix with
    # at {} (its own key, a ghost row on the trend page); read back, it is the same prediction's ERROR night
    good = {"concurrency": "2"}
    n1 = _night(1, _value("tput[concurrency=2]", good, "pass", 311.64))
    bad = _night(7, _value("tput[concurrency=2]", {}, "error", None), _value("kv-tokens", {}, "error", None))
    n2 = _night(8, _value("tput[concurrency=2]", good, "pass", 350.9))
    mended = unify_keys([n1, bad, n2])
    keys = {v.key for r in mended for v in r.values}
    assert keys == {"nightly.yaml::tput[concurrency=2]::concurrency=2", "nightly.yaml::kv-tokens"}
    err = mended[1].value("nightly.yaml::tput[concurrency=2]::concurrency=2")
    assert err is not None and err.status == "error" and err.at == good
    # a prediction with no at: (kv-tokens) keeps its key; nothing to match leaves a value as it was
    assert unify_keys([bad])[0].values == bad.values


# ------------------------------------------------------------- D5: a replay of a live night's own results file


def test_a_results_files_id_is_its_creation_and_points_not_its_bytes() -> None:
    from pytest_roofline.history import drift_for, measurement_id
    from pytest_roofline.history._drift import DriftPolicy, DriftStatus

    live = {"created_at": "2026-12-06T11:10:42Z", "updated_at": "2026-12-06T11:11:30Z", "status": "complete",
            "points": [{"id": "closed-c2", "started_at": "2026-12-06T11:10:45Z",
                        "finished_at": "2026-12-06T11:10:50Z"}]}
    assert measurement_id(live) == measurement_id({**live, "updated_at": "later", "status": "interrupted"})
    assert measurement_id(live) != measurement_id({**live, "created_at": "2026-12-06T11:45:00Z"})  # n1late
    # night 1 stored live at its session's start (11:10:04Z, before the file's 11:10:42Z), holding the file's id;
    # a replay of that file is compared with the nights before night 1 (none), never with night 1 itself
    n1 = _night(1, _value("tput[concurrency=2]", {"concurrency": "2"}, "pass", 311.64))
    from dataclasses import replace

    n1 = replace(n1, started_at="2026-12-06T11:10:04Z", measurements=(measurement_id(live),))
    now = _value("tput[concurrency=2]", {"concurrency": "2"}, "pass", 311.64)
    d = drift_for([now], [n1], DriftPolicy(), setup=SETUP, before="2026-12-06T11:10:42Z",
                  measurement=measurement_id(live))[now.key]
    assert d.status is DriftStatus.NEW and d.stored_as == n1.run_id
    # without the id, the earlier start makes night 1 a baseline of its own replay (the defect): 0.0 %, steady
    same = drift_for([now], [n1], DriftPolicy(), setup=SETUP, before="2026-12-06T11:10:42Z")[now.key]
    assert same.status is DriftStatus.STEADY and same.change_rel == 0.0
