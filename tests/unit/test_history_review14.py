"""The s14 review's history findings (notes/s14/review.md §7 and the -k night of fix-nightly.md's "left undone"):
an edited ``window:`` is a redefinition, every stored copy of a replayed measurement is left out, the "store the
whole night" command is quoted, and a run keeps the predictions its file held that it did not check. Values are
worked out by hand beside each assertion."""

from __future__ import annotations

import re
import shlex
from dataclasses import replace

from support.history_nights import POINTS_WITH_KV

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.history import (
    DriftPolicy,
    DriftStatus,
    RunSummary,
    SetupKey,
    StoredValue,
    build_records,
    definition_hash,
    drift_for,
    file_prediction_keys,
    prediction_key,
)
from pytest_roofline.pytest_plugin.history import whole_night_command
from pytest_roofline.report.trend import render_trend

SETUP = SetupKey("cpu", "roofline-tiny", "0.32.0")
KEY = prediction_key("nightly.yaml", "tput", {})


def _value(measured: float, *, window: str | None = "run", definition: str = "h1") -> StoredValue:
    return StoredValue(key=KEY, prediction_id="tput", file="nightly.yaml", quantity="output_throughput",
                       dimension="throughput", status="pass", mode="measured", unit="tok/s", measured=measured,
                       predicted_text="300 tok/s", definition_hash=definition, window=window)


def _night(day: int, *values: StoredValue, measurements: tuple[str, ...] = ()) -> RunSummary:
    return RunSummary(run_id=f"202612{day:02d}T020000Z-nocommit-{day:06x}", setup=SETUP,
                      started_at=f"2026-12-{day:02d}T02:00:00Z", mode="engine", values=values,
                      measurements=measurements)


# ------------------------------------------------------------------------------ §7: the window is part of a definition


def test_the_hash_covers_a_steady_window_and_leaves_whole_run_hashes_as_they_were() -> None:
    verdict = {"quantity": "output_throughput", "predicted_text": "300 tok/s", "unit": "tok/s",
               "tolerance_text": "±10%", "lo": 270.0, "hi": 330.0, "at": {}}
    before = definition_hash(verdict)  # a verdict dict from before Verdict.window: no "window" key
    assert definition_hash({**verdict, "window": "run"}) == before  # unchanged for every whole-run value
    assert definition_hash({**verdict, "window": ""}) == before  # a math verdict
    assert definition_hash({**verdict, "window": "steady"}) != before


def test_an_edited_window_is_a_redefinition_not_drift() -> None:
    # 300 → 360 tok/s, +20 %, with three earlier nights at 300 (a spread of 0, known): drifted, had the window not
    # changed; the window went from the whole run to the steady window, another figure: prediction changed
    nights = [_night(d, _value(300.0)) for d in (1, 2, 3)]
    same = drift_for([_value(360.0)], nights, DriftPolicy(), setup=SETUP)[KEY]
    assert same.status is DriftStatus.DRIFTED
    edited = drift_for([_value(360.0, window="steady", definition="h2")], nights, DriftPolicy(), setup=SETUP)[KEY]
    assert edited.status is DriftStatus.PREDICTION_CHANGED
    assert ("not judged as drift: the prediction changed since: it reads its figure over the steady window, where it "
            "read the whole run (window:)") in edited.text
    assert "note: the prediction's ink changed" not in edited.text


def test_the_badge_of_a_redefinition_names_what_changed() -> None:
    """The badge said "quantity changed" when only the window had. The drift keeps what changed (Drift.changed),
    and the scorecard's badge, the pytest-html Drift column and the trend page's short drift name it."""
    from pytest_roofline.history import Drift, changed_badge
    from pytest_roofline.pytest_plugin.html import drift_cell
    from pytest_roofline.report.scorecard import _drift_cell

    nights = [_night(d, _value(300.0)) for d in (1, 2, 3)]
    window = drift_for([_value(360.0, window="steady", definition="h2")], nights, DriftPolicy(), setup=SETUP)[KEY]
    quantity = drift_for([replace(_value(360.0, definition="h2"), quantity="request_throughput")], nights,
                         DriftPolicy(), setup=SETUP)[KEY]
    both = drift_for([replace(_value(360.0, window="steady", definition="h2"), quantity="request_throughput")],
                     nights, DriftPolicy(), setup=SETUP)[KEY]
    steady = drift_for([_value(300.0)], nights, DriftPolicy(), setup=SETUP)[KEY]
    assert [d.status for d in (window, quantity, both)] == [DriftStatus.PREDICTION_CHANGED] * 3
    assert (window.changed, quantity.changed, both.changed, steady.changed) == (
        ("window",), ("quantity",), ("quantity", "window"), ())
    assert [changed_badge(d) for d in (window, quantity, both)] == [
        "window changed", "quantity changed", "quantity and window changed"]
    assert Drift.from_dict(window.to_dict()) == window  # as a test report carries it to the scorecard
    assert window.to_dict()["changed"] == ["window"]
    # a drift written before it said what changed
    assert changed_badge({"status": "prediction_changed", "text": "..."}) == "prediction changed"

    # the scorecard's badge (report/scorecard.py): +20% (360 vs 300 tok/s) and the word
    cell = _drift_cell(window.to_dict())
    assert re.search(r'>\+20(\.0+)?% <span class="rl-badge rl-drift-prediction_changed">window changed</span></td>$',
                     cell), cell
    assert "quantity changed" not in cell
    assert '<span class="rl-badge rl-drift-prediction_changed">quantity changed</span>' in _drift_cell(
        quantity.to_dict())
    # the pytest-html Drift column
    assert "window changed</td>" in drift_cell(window.to_dict())
    assert "quantity changed" not in drift_cell(window.to_dict())
    # the trend page: the nights table's short drift of the latest night
    html = render_trend([*nights, _night(4, _value(360.0, window="steady", definition="h2"))])
    assert re.search(r'<span class="drift drift-prediction_changed" title="[^"]*">\+20(\.0+)?% \(window changed\)'
                     r"</span>", html)
    assert "quantity changed" not in html


def test_a_value_stored_before_windows_were_kept_is_not_redefined_by_them() -> None:
    # window None: not known. A steady prediction's first night after the upgrade: its hash now holds the window
    # and the stored one did not, so neither a redefinition nor an ink note; the +20 % is judged as usual
    nights = [_night(d, _value(300.0, window=None, definition="old")) for d in (1, 2, 3)]
    d = drift_for([_value(360.0, window="steady", definition="new")], nights, DriftPolicy(), setup=SETUP)[KEY]
    assert d.status is DriftStatus.DRIFTED and "note:" not in d.text
    # a whole-run value keeps its hash, so an edited ink is still a note against an old night
    d = drift_for([replace(_value(360.0, definition="other"), predicted_text="350 tok/s")], nights, DriftPolicy(),
                  setup=SETUP)[KEY]
    assert d.status is DriftStatus.DRIFTED
    assert "note: the prediction's ink changed since (300 tok/s → 350 tok/s)" in d.text


def test_a_measured_verdict_says_its_window_where_it_moves_the_figure() -> None:
    from support.paths import RECORDED

    from pytest_roofline.measure.results.peers import load_any
    from pytest_roofline.report.scorecard import score_spec

    text = (RECORDED.parent / "cpu-tiny.yaml").read_text()
    spec = loads_spec(text, file="cpu-tiny.yaml")
    data = dict(load_any(RECORDED / "cpu-tiny-2026-12-05.results.json"))
    steady = replace(spec, predictions=[replace(p, window="steady") for p in spec.predictions])
    plain = {v.id: v for v in score_spec(spec, data)}
    windowed = {v.id: v for v in score_spec(steady, data)}
    measured = [i for i, v in plain.items() if v.mode == "measured" and v.definition]
    assert measured and all(plain[i].window == "run" for i in measured)
    # a client figure (TTFT, throughput) read over the steady window is another figure: steady; a server counter
    # (the engine's own log) does not change with the window: run
    assert {windowed[i].window for i in measured} == {"run", "steady"}
    for i in measured:
        assert (windowed[i].window == "steady") == (windowed[i].definition != plain[i].definition)
    assert all(v.window == "" for v in plain.values() if v.mode == "math")


# ------------------------------------------------------------------------------ §7: every stored copy is itself


def test_a_replay_is_compared_with_no_copy_of_its_own_measurement() -> None:
    # a store written before replays were matched holds night 4's measurement twice (runs 4 and 5, both with its
    # id). The replay of it leaves out both: its baseline is night 3 (300), +0 % → steady; with the old next() the
    # second copy (310) was its baseline
    mid = "m-night4"
    runs = [_night(1, _value(300.0)), _night(2, _value(300.0)), _night(3, _value(300.0)),
            _night(4, _value(310.0), measurements=(mid,)), _night(5, _value(310.0), measurements=(mid,))]
    d = drift_for([_value(300.0)], runs, DriftPolicy(), setup=SETUP, measurement=mid)[KEY]
    assert d.status is DriftStatus.STEADY and d.baseline == 300.0 and d.baseline_run_ids == (runs[2].run_id,)
    only = drift_for([_value(310.0)], runs[3:], DriftPolicy(), setup=SETUP, measurement=mid)[KEY]
    assert only.status is DriftStatus.NEW and only.stored_as == runs[3].run_id


# ------------------------------------------------------------------------------ §7: the command line is quoted


def test_the_store_the_whole_night_command_quotes_its_paths() -> None:
    line = whole_night_command(["/runs/night 5/results.json"], ["predictions/my file.yaml"], "/hist dir")
    assert line == ("pytest --replay '/runs/night 5/results.json' 'predictions/my file.yaml' --roofline-history "
                    "'/hist dir'")
    assert shlex.split(line) == ["pytest", "--replay", "/runs/night 5/results.json", "predictions/my file.yaml",
                                 "--roofline-history", "/hist dir"]
    assert whole_night_command(["r.json"], [], "h") == "pytest --replay r.json FILE.yaml --roofline-history h"
    assert whole_night_command([], ["a.yaml"], "h") == ""


# ------------------------------------------------------------------------------ a -k night keeps what it left out

def test_a_k_night_keeps_the_predictions_it_left_out_and_the_trend_page_says_so() -> None:
    spec = loads_spec(POINTS_WITH_KV, file="nightly.yaml")
    keys = file_prediction_keys(spec)
    assert keys == ["nightly.yaml::tput[concurrency=2]::concurrency=2",
                    "nightly.yaml::tput[concurrency=4]::concurrency=4", "nightly.yaml::kv"]

    def verdict(pid: str, at: dict[str, str], x: float) -> dict[str, object]:
        return {"id": pid, "quantity": "output_throughput", "dimension": "throughput", "status": "pass",
                "mode": "measured", "file": "nightly.yaml", "at": at, "measured_value": x, "unit": "tok/s"}

    whole = [verdict("tput[concurrency=2]", {"concurrency": "2"}, 300.0),
             verdict("tput[concurrency=4]", {"concurrency": "4"}, 500.0),
             {**verdict("kv", {}, 0.0), "quantity": "kv_bytes_per_token", "mode": "math", "measured_value": None}]
    (first,) = build_records(whole, setups={"nightly.yaml": SETUP}, started_at="2026-12-01T02:00:00Z",
                             mode="engine", file_keys={"nightly.yaml": keys})
    assert first.summary.unchecked == ()
    # -k "concurrency=2": one value checked, the other two left out and kept as such
    (night,) = build_records(whole[:1], setups={"nightly.yaml": SETUP}, started_at="2026-12-02T02:00:00Z",
                             mode="engine", file_keys={"nightly.yaml": keys})
    assert night.summary.unchecked == (keys[1], keys[2])
    assert RunSummary.from_dict(night.summary.to_dict()).unchecked == (keys[1], keys[2])  # what a store reads back
    runs = [replace(first.summary, run_id="20261201T020000Z-nocommit-000001"),
            replace(night.summary, run_id="20261202T020000Z-nocommit-000002")]
    row = _summary_row(render_trend(runs), "tput[concurrency=4]")
    assert ("not checked in the latest run of its file (left out by -k or -m); latest value from 2026-12-01 02:00 "
            "UTC") in row
    assert "not in the latest run of its file" not in row
    # a prediction the file no longer holds (not kept as left out) still reads as gone
    gone = [runs[0], replace(runs[1], unchecked=(keys[2],))]
    assert "not in the latest run of its file" in _summary_row(render_trend(gone), "tput[concurrency=4]")


def _summary_row(html: str, pid: str) -> str:
    """The summary table's row of ``pid``, its tags stripped."""
    table = re.search(r'<table class="summary">.*?</table>', html, flags=re.S)
    assert table is not None
    rows = [re.sub(r"<[^>]+>", "", r) for r in re.findall(r"<tr class=.*?</tr>", table.group(0), flags=re.S)]
    (row,) = [r for r in rows if r.startswith(pid)]
    return row
