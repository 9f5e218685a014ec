"""Drift, run comparison and run recording: pure functions, checked with numbers worked out by hand."""

from __future__ import annotations

import pytest

from pytest_roofline.errors import ToleranceError
from pytest_roofline.format.spec import SpecError, loads_spec
from pytest_roofline.history import (
    DriftPolicy,
    DriftStatus,
    RunSummary,
    SetupKey,
    StoredValue,
    build_records,
    compare_runs,
    compared_count,
    drift_counts,
    drift_for,
    render_comparison,
    setup_key,
)

SETUP = SetupKey("h100-sxm5-80gb", "qwen3-8b", "0.32.0")
OTHER = SetupKey("a100-sxm4-80gb", "qwen3-8b", "0.32.0")
KEY = "predictions/x.yaml::tput-c64"


def value(measured: float | None, *, mode: str = "measured", predicted_text: str = "1,742 tok/s",
          drift_text: str = "", lo: float | None = 1567.8, hi: float | None = 1916.2) -> StoredValue:
    return StoredValue(key=KEY, prediction_id="tput-c64", file="predictions/x.yaml", quantity="output_throughput",
                       dimension="throughput", status="pass", mode=mode, unit="tok/s", measured=measured,
                       predicted=1742.0, lo=lo, hi=hi, predicted_text=predicted_text, drift_text=drift_text)


def run(day: int, measured: float | None, *, setup: SetupKey = SETUP, commit: str | None = None,
        month: int = 11, **kw: object) -> RunSummary:
    values = () if measured is None else (value(measured, **kw),)  # type: ignore[arg-type]
    return RunSummary(run_id=f"2026{month:02d}{day:02d}T020000Z-c{day}-aaaaaa", setup=setup,
                      started_at=f"2026-{month:02d}-{day:02d}T02:00:00Z", mode="engine", commit=commit,
                      values=values)


def one(values: list[StoredValue], runs: list[RunSummary], policy: DriftPolicy, setup: SetupKey = SETUP):
    return drift_for(values, runs, policy, setup=setup)[KEY]


def test_previous_run_beyond_threshold() -> None:
    # 1,000 → 1,124 tok/s: (1124 − 1000) / 1000 = +12.4%, beyond ±10%. Three earlier nights 1000, 990, 1000: mean
    # 996.67, standard deviation √((3.33² · 2 + 6.67²) / 2) = 5.7735, × t(0.975, 2) = 4.302653 × √(1 + 1/3) → ±28.68
    # tok/s; 1124 − 996.67 = 127.3 is outside it: drifted
    d = one([value(1124.0)], [run(28, 1000.0), run(29, 990.0), run(30, 1000.0, commit="abc1234")], DriftPolicy("10%"))
    assert d.status is DriftStatus.DRIFTED
    assert d.baseline == 1000.0
    assert d.change_rel == pytest.approx(0.124)
    assert d.noise == pytest.approx(4.302653 * (100 / 3) ** 0.5 * (4 / 3) ** 0.5, rel=1e-5)
    # the noise it beat, so the line can be checked from the log (trial s26a #14)
    assert d.text == ("+12.4% vs previous run (2026-11-30, abc1234; baseline 1,000 tok/s), beyond 10% and the noise "
                      "(the earlier nights' spread ±28.68 tok/s)")
    assert d.baseline_run_ids == ("20261130T020000Z-c30-aaaaaa",)


def test_fewer_than_three_earlier_nights_never_drift() -> None:
    # the same +12.4 % against one and against two earlier nights: the night-to-night noise is not known, and the
    # within-run intervals alone do not hold it (issue: trial 14n, D1), so it is uncertain, never drifted
    d1 = one([value(1124.0)], [run(30, 1000.0, commit="abc1234")], DriftPolicy("10%"))
    assert d1.status is DriftStatus.UNCERTAIN and d1.change_rel == pytest.approx(0.124)
    assert d1.text == ("+12.4% vs previous run (2026-11-30, abc1234; baseline 1,000 tok/s), beyond 10% and the "
                       "measurements' intervals, but 1 of 3 earlier nights: the run-to-run noise is not known yet")
    d2 = one([value(1124.0)], [run(29, 990.0), run(30, 1000.0)], DriftPolicy("10%"))
    assert d2.status is DriftStatus.UNCERTAIN
    assert d2.text.endswith("but 2 of 3 earlier nights: the run-to-run noise is not known yet")
    # two earlier nights that disagree by 21 % (6.099 and 4.814 ms, the trial's tpot-p50 at C=2), tonight 5.760 ms:
    # +19.6 % from the previous night, but between the two: their own disagreement spans tonight's value
    # (here in tok/s, the helper's unit: 6,099, 4,814 and 5,760)
    d = one([value(5760.0)], [run(29, 6099.0), run(30, 4814.0)], DriftPolicy("10%"))
    assert d.status is DriftStatus.UNCERTAIN and d.change_rel == pytest.approx(5760 / 4814 - 1)  # +19.7 %
    assert d.text.startswith("+19.7% vs previous run (2026-11-30; baseline 4,814 tok/s), beyond 10%")
    assert ("within the 2 earlier nights' own range (4,814 tok/s .. 6,099 tok/s: their disagreement already spans "
            in d.text)
    assert d.text.endswith("2 of 3 earlier nights: the run-to-run noise is not known yet")


def test_within_threshold_is_steady() -> None:
    # 1,000 → 1,049: +4.9%, within ±5%
    d = one([value(1049.0)], [run(30, 1000.0)], DriftPolicy("±5%"))
    assert d.status is DriftStatus.STEADY
    assert d.text.startswith("+4.9% vs previous run (2026-11-30; baseline 1,000 tok/s), within ±5%")


def test_median_of_five_with_an_outlier() -> None:
    # the last five nights 1000, 1010, 5000 (an outlier), 990, 1020 → sorted 990, 1000, 1010, 1020, 5000: median
    # 1010; now 1136.25 → (1136.25 − 1010) / 1010 = +12.5%. The mean (1804) would have hidden the rise in the
    # baseline. The nights' own spread does not hide the outlier: their standard deviation is 1,786.66 (mean 1804,
    # squared deviations summing to 12,768,520, over 4), × t(0.975, 4) = 2.776445 × √(1 + 1/5) → ±5,434 tok/s, so
    # the +126 tok/s move is uncertain, never drifted: after a wild night the next ones cannot claim a change
    nights = [run(20, 3000.0), run(26, 1000.0), run(27, 1010.0), run(28, 5000.0), run(29, 990.0), run(30, 1020.0)]
    d = one([value(1136.25)], nights, DriftPolicy("±5%", "median:5"))
    assert d.baseline == 1010.0
    assert d.change_rel == pytest.approx(0.125)
    assert d.status is DriftStatus.UNCERTAIN
    assert d.noise == pytest.approx(2.776445 * (12_768_520 / 4) ** 0.5 * 1.2 ** 0.5, rel=1e-5)
    assert d.text == ("+12.5% vs median of 5 runs (2026-11-26..30; baseline 1,010 tok/s), beyond ±5% but within the "
                      "earlier nights' spread (±5,434 tok/s)")  # the nights' spread decided: the values had no interval
    assert len(d.baseline_dates) == 5 and d.baseline_dates[0].startswith("2026-11-26")


def test_missing_nights_are_skipped_not_counted() -> None:
    # nights 27 and 29 did not measure it: the median of 3 takes 26, 28, 30 (1000, 1100, 1200 → 1100)
    nights = [run(26, 1000.0), run(27, None), run(28, 1100.0), run(29, 1500.0, mode="math"), run(30, 1200.0)]
    d = one([value(1100.0)], nights, DriftPolicy("5%", "median:3"))
    assert d.baseline == 1100.0 and d.change_rel == 0.0 and d.status is DriftStatus.STEADY
    assert d.baseline_run_ids == ("20261126T020000Z-c26-aaaaaa", "20261128T020000Z-c28-aaaaaa",
                                  "20261130T020000Z-c30-aaaaaa")


def test_median_of_an_even_count_and_a_span_across_months() -> None:
    # Nov 30 and Dec 1: 1000 and 1200 → median 1100; now 1100 → 0.0%
    d = one([value(1100.0)], [run(30, 1000.0), run(1, 1200.0, month=12)], DriftPolicy("5%", "median:4"))
    assert d.baseline == 1100.0
    assert "median of 2 runs (2026-11-30..2026-12-01; baseline 1,100 tok/s)" in d.text


def test_sign_flip() -> None:
    # a latency-difference quantity going from −2 to +1: (1 − (−2)) / |−2| = +150%
    nights = [run(d, -2.0, lo=None, hi=None) for d in (28, 29, 30)]  # three that agree: a spread of 0
    d = one([value(1.0, lo=None, hi=None)], nights, DriftPolicy("10%"))
    assert d.change_rel == pytest.approx(1.5) and d.status is DriftStatus.DRIFTED
    assert d.text.startswith("+150.0%")


def test_zero_baseline() -> None:
    # 0 preemptions → 3: no relative change exists; any move from zero is beyond a relative threshold
    d = one([value(3.0, lo=None, hi=None)], [run(x, 0.0, lo=None, hi=None) for x in (28, 29, 30)],
            DriftPolicy("10%"))
    assert d.change_rel is None and d.status is DriftStatus.DRIFTED
    assert d.text.startswith("0 tok/s → 3 tok/s vs previous run")  # in the value's unit, never raw SI
    d0 = one([value(0.0, lo=None, hi=None)], [run(30, 0.0, lo=None, hi=None)], DriftPolicy("10%"))
    assert d0.change_rel == 0.0 and d0.status is DriftStatus.STEADY


def test_one_sided_and_asymmetric_thresholds() -> None:
    # +10%/-3%: a fall of 4% drifts, a rise of 8% does not
    p = DriftPolicy("+10%/-3%")
    three = [run(x, 1000.0) for x in (28, 29, 30)]
    assert one([value(960.0)], three, p).status is DriftStatus.DRIFTED
    assert one([value(1080.0)], [run(30, 1000.0)], p).status is DriftStatus.STEADY
    # <= +5%: only rises count; a fall of 50% is steady
    assert one([value(500.0)], [run(30, 1000.0)], DriftPolicy("<= +5%")).status is DriftStatus.STEADY


def test_per_prediction_threshold_wins() -> None:
    # +12.4% with drift: 20% in the YAML → steady although the option says 10%
    d = one([value(1124.0, drift_text="20%")], [run(30, 1000.0)], DriftPolicy("10%"))
    assert d.status is DriftStatus.STEADY and d.threshold_text == "20%"


def test_only_the_same_setup_is_a_baseline() -> None:
    d = one([value(1124.0)], [run(30, 1000.0, setup=OTHER)], DriftPolicy("10%"))
    assert d.status is DriftStatus.NEW


def test_not_measured_and_new() -> None:
    assert one([value(None)], [run(30, 1000.0)], DriftPolicy()).status is DriftStatus.NOT_MEASURED
    assert one([value(812.0, mode="math")], [run(30, 1000.0)], DriftPolicy()).status is DriftStatus.NOT_MEASURED
    assert one([value(1000.0)], [], DriftPolicy()).status is DriftStatus.NEW


def test_an_edited_ink_is_a_note_never_a_status() -> None:
    # trial 14n, D8: the ink moved from 1,742 to 1,900 tok/s. An ink cannot move a measured value: the +30 % against
    # three earlier nights of 1,000 (spread 0) is judged as usual, drifted, and the edit is a note on it
    three = [run(x, 1000.0) for x in (28, 29, 30)]
    d = one([value(1300.0, predicted_text="1,900 tok/s")], three, DriftPolicy("10%"))
    assert d.status is DriftStatus.DRIFTED
    assert d.text == ("+30.0% vs previous run (2026-11-30; baseline 1,000 tok/s), beyond 10%; note: the prediction's "
                      "ink changed since (1,742 tok/s → 1,900 tok/s), which does not move the measured value")
    # within the threshold it is steady, with the same note
    s = one([value(1020.0, predicted_text="1,900 tok/s")], three, DriftPolicy("10%"))
    assert s.status is DriftStatus.STEADY and "ink changed since (1,742 tok/s → 1,900 tok/s)" in s.text


def test_a_changed_quantity_is_prediction_changed() -> None:
    # the same id and point now measures another quantity: its number may have moved because of the edit
    before = [run(x, 1000.0) for x in (28, 29, 30)]
    from dataclasses import replace

    now = replace(value(1300.0), quantity="request_throughput")
    d = one([now], before, DriftPolicy("10%"))
    assert d.status is DriftStatus.PREDICTION_CHANGED
    # no move in % and no threshold across two quantities (trial s24 M2: "-99.2% ... beyond 10%" of a block count
    # against a token count): the two values, and what changed
    assert d.text == ("not compared: the prediction changed since: it measures request_throughput, where it measured "
                      "output_throughput; 1,000 tok/s then (2026-11-30), 1,300 tok/s now")
    assert d.change_rel is None
    # and it is not compared: a night whose every value changed definition compared nothing, so it cannot pass
    # --roofline-drift-fail (trial s24 H1: "4 compared (4 prediction changed)", exit 0)
    steady = one([value(1010.0)], before, DriftPolicy("10%"))
    assert compared_count([d]) == (0, 1) and compared_count([d.to_dict(), steady.to_dict()]) == (1, 2)
    assert drift_counts([d, steady]) == ("1 compared (1 steady), 1 prediction changed (measured against another "
                                         "definition: not judged as drift)")


def test_counts_line() -> None:
    three = [run(x, 1000.0) for x in (28, 29, 30)]
    ds = [one([value(1124.0)], three, DriftPolicy()), one([value(1000.0)], [], DriftPolicy())]
    assert drift_counts(ds, DriftPolicy()) == "1 compared (1 drifted), 1 new vs the previous run"
    assert drift_counts([d.to_dict() for d in ds], DriftPolicy("5%", "median:5")) == (
        "1 compared (1 drifted), 1 new vs the median of the last 5 runs")
    # nothing compared is said, never left out
    assert drift_counts(ds[1:]) == "0 compared, 1 new"


@pytest.mark.parametrize("bad", ["1,600..1,900", ">= 5 ms", "fast"])
def test_bad_thresholds(bad: str) -> None:
    with pytest.raises(ToleranceError):
        DriftPolicy(bad)


@pytest.mark.parametrize("bad", ["median", "median:0", "mean:5", "last"])
def test_bad_baselines(bad: str) -> None:
    with pytest.raises(ValueError, match="previous, median:N"):
        DriftPolicy("5%", bad)


YAML = """
hardware: h100-sxm
model: qwen3-8b
engine: {version: "0.32.0"}
defaults: {drift: 7%}
predictions:
  - id: a
    quantity: kv_bytes_per_token
    predicted: 144 KiB
  - id: b
    quantity: kv_bytes_per_token
    predicted: 144 KiB
    drift: +10%/-3%
"""


def test_yaml_drift_key_and_default() -> None:
    spec = loads_spec(YAML, file="x.yaml")
    assert [p.drift for p in spec.predictions] == ["7%", "+10%/-3%"]


def test_yaml_bad_drift_names_its_line() -> None:
    # line 13 of YAML (it starts with a blank line) is b's drift:
    bad = YAML.replace("drift: +10%/-3%", "drift: 0.9..1.1")
    err = loads_spec(bad, file="x.yaml").predictions[1].error
    assert isinstance(err, SpecError) and err.line == 13 and "'0.9..1.1' is not a relative threshold" in str(err)
    assert str(err).count("5% (either way)") == 1  # the fix once, not in the message as well
    with pytest.raises(SpecError, match=r"x.yaml:5: defaults.drift"):  # the file's default: the file stops
        loads_spec(YAML.replace("drift: 7%", "drift: fast"), file="x.yaml")


def test_setup_key_sources() -> None:
    detected = {"setup": {"hardware": {"declared": "h100-pcie-80gb", "detected": {"variant": "h100-sxm5-80gb"}},
                          "model": {"name": "qwen3-8b"}, "engine": {"version": "0.31.0"}},
                "engine_report": {"version": "0.32.0"}}
    assert setup_key(hardware="h100-pcie-80gb", model="m", engine_version="0.30", results=detected) == SetupKey(
        "h100-sxm5-80gb", "qwen3-8b", "0.32.0")
    assert setup_key(hardware="cpu", model="roofline-tiny", engine_version=None, gpu="cpu") == SetupKey(
        "cpu", "roofline-tiny", "unknown")
    assert setup_key(hardware="a100-sxm4-80gb", model="qwen3-8b", engine_version="0.26.0") == SetupKey(
        "a100-sxm4-80gb", "qwen3-8b", "0.26.0")


def test_build_records_groups_by_setup_and_makes_paths_relative(tmp_path) -> None:
    (tmp_path / ".git").mkdir()  # the files' repository root: keys are relative to it
    f1, f2 = str(tmp_path / "predictions" / "a.yaml"), str(tmp_path / "predictions" / "b.yaml")
    vs = [{"id": "x", "file": f1, "status": "pass", "mode": "measured", "measured_value": 2.0, "at": {}},
          {"id": "y", "file": f2, "status": "fail", "mode": "math", "model_value": 3.0, "at": {"batch": "16"}}]
    recs = build_records(vs, setups={f1: SETUP, f2: OTHER}, started_at="2026-12-01T02:00:00Z", mode="engine",
                         rootdir=tmp_path, label="h100", drift_texts={"predictions/a.yaml::x": "5%"})
    assert [r.summary.setup for r in recs] == [SETUP, OTHER]
    assert recs[0].summary.values[0].key == "predictions/a.yaml::x" and recs[0].summary.values[0].drift_text == "5%"
    assert recs[1].summary.values[0].key == "predictions/b.yaml::y::batch=16"
    assert recs[1].summary.counts == {"fail": 1} and recs[0].summary.label == "h100"


def test_compare_and_render() -> None:
    a, b = run(30, 1000.0), run(1, 1250.0, month=12)
    rows = compare_runs(a, b)
    assert len(rows) == 1 and rows[0].change_rel == pytest.approx(0.25)  # 1000 → 1250: +25%
    lines = render_comparison(a, b, rows)
    assert all(len(line) <= 120 for line in lines)
    assert any("1,000 tok/s" in line and "1,250 tok/s" in line and "+25.0 %" in line for line in lines)


def test_topology_is_part_of_the_setup_key() -> None:
    """A TP=4 run and a TP=8 run of one model on one chip, or a 2-replica deployment and one engine, are different
    setups: neither is the other's drift baseline."""
    from pytest_roofline.history._recording import topology_suffix

    assert topology_suffix({}) == ""
    assert topology_suffix({"args": {"tensor_parallel_size": 1}}) == ""
    assert topology_suffix({"args": {"tensor_parallel_size": 4}}) == "-tp4"
    assert topology_suffix({"args": {"tensor_parallel_size": 2, "pipeline_parallel_size": 2}}) == "-tp2-pp2"
    assert topology_suffix({"args": {"tensor_parallel_size": 8}, "replicas": 2}) == "-tp8-r2"


def test_an_uncertain_line_names_the_spread_that_decided_it() -> None:
    """The nights' spread, not the runs' own intervals, decides here; the line says which, and gives both.
    Nights 1,000, 1,100, 900 tok/s, each with a 95 % interval of ±10: mean 1,000, sd 100, spread t(0.975, 2) ·
    100 · √(4/3) = 4.302653 · 115.47 = 496.8 tok/s. Tonight 1,150 ± 10 vs the previous night 900: +27.8 %, beyond
    10 %; the intervals alone part them (250 > √(10² + 10²) = 14.1) but tonight is 150 from the nights' mean,
    inside ±496.8: uncertain, and the runs' own intervals were ±14 tok/s."""
    def iv(x: float) -> StoredValue:
        return StoredValue(key=KEY, prediction_id="tput-c64", file="predictions/x.yaml", quantity="output_throughput",
                           dimension="throughput", status="pass", mode="measured", unit="tok/s", measured=x,
                           predicted=1742.0, lo=1567.8, hi=1916.2, predicted_text="1,742 tok/s",
                           measured_lo=x - 10, measured_hi=x + 10, interval_method="t", interval_level=0.95)
    nights = [RunSummary(run_id=f"202611{d}T020000Z-c{d}-aaaaaa", setup=SETUP, started_at=f"2026-11-{d}T02:00:00Z",
                         mode="engine", values=(iv(x),)) for d, x in ((28, 1000.0), (29, 1100.0), (30, 900.0))]
    d = drift_for([iv(1150.0)], nights, DriftPolicy("10%"), setup=SETUP)[KEY]
    assert d.status is DriftStatus.UNCERTAIN and d.baseline == 900.0
    assert d.noise == pytest.approx(4.302653 * 100 * (4 / 3) ** 0.5, rel=1e-5)
    assert d.text == ("+27.8% vs previous run (2026-11-30; baseline 900 tok/s), beyond 10% but within the earlier "
                      "nights' spread (±496.8 tok/s; the runs' own intervals ±14.14 tok/s)")


def test_a_replays_earlier_nights_are_chosen_by_time_not_by_how_the_time_is_written() -> None:
    """``before`` (a replay's own measurement time) keeps the nights that started earlier, compared as times: a
    night stored as ``2026-11-30T03:00:00+01:00`` is 02:00 UTC, before a replay made at 02:30 UTC (as strings,
    "…T03…" sorts after "…T02:30…" and the night would be lost)."""
    night = RunSummary(run_id="20261130T020000Z-c30-aaaaaa", setup=SETUP, started_at="2026-11-30T03:00:00+01:00",
                       mode="engine", values=(value(1000.0),))
    d = drift_for([value(1010.0)], [night], DriftPolicy("10%"), setup=SETUP, before="2026-11-30T02:30:00Z")[KEY]
    assert d.status is DriftStatus.STEADY and d.baseline == 1000.0
    later = drift_for([value(1010.0)], [night], DriftPolicy("10%"), setup=SETUP, before="2026-11-30T01:30:00Z")[KEY]
    assert later.status is DriftStatus.NEW


def test_a_baseline_on_a_day_of_several_runs_names_its_time() -> None:
    # trial 21, L1: three runs on 2026-12-12 (02:00, 09:30, 17:00) each read "vs previous run (2026-12-12, ...)"
    def at(hm: str, x: float) -> RunSummary:
        return RunSummary(run_id=f"20261212T{hm.replace(':', '')}00Z-c-aaaaaa", setup=SETUP,
                          started_at=f"2026-12-12T{hm}:00Z", mode="engine", values=(value(x),))

    runs = [at("02:00", 1000.0), at("09:30", 1000.0), at("17:00", 1000.0)]
    assert one([value(1000.0)], runs, DriftPolicy("10%")).text.startswith(
        "0.0% vs previous run (2026-12-12 17:00 UTC; baseline")
    assert "vs median of 3 runs (2026-12-12 02:00..17:00 UTC;" in one([value(1000.0)], runs,
                                                                       DriftPolicy("10%", "median:3")).text
    # one run a day: the date alone, as before
    assert "(2026-11-30; baseline" in one([value(1000.0)], [run(29, 1000.0), run(30, 1000.0)], DriftPolicy()).text
