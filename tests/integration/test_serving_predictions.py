"""The serving model inside the prediction format, the scorer and the reports (issue 9, integration).

Every expected value here is worked out independently of the code path under test: by calling the serving
model (:func:`pytest_roofline.model.serving.simulate`) directly on the same workload, by a mechanism with a
known answer (a per-step overhead adds itself to every decode step of one request), or from the file text.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from support.paths import DAY3, DAY3_RESULTS, PREDICTIONS
from support.pytest_run import NO_HTML

from pytest_roofline import scoring
from pytest_roofline.errors import CalibrationMismatchWarning, SpecError
from pytest_roofline.format.spec import json_schema, load_spec, loads_spec
from pytest_roofline.measure.results import RecordedMeasurement, load_results
from pytest_roofline.model import calibration
from pytest_roofline.model import serving as sv
from pytest_roofline.quantities.serving_values import TERM_LABELS

BASE = """\
hardware: a100-sxm4-80gb
model: qwen3-8b
engine: {name: vllm, version: "0.26.0"}
workload: {input_len: 1024, output_len: 1024, kv_context: 1000}
sweep: {mode: closed, concurrency: [1, 8], requests_per_point: 10x}
"""


def _spec(tmp_path: Path, body: str, head: str = BASE, name: str = "p.yaml"):
    path = tmp_path / name
    path.write_text(head + body, encoding="utf-8")
    return load_spec(path)


def _direct(spec, *, concurrency=None, rate=None, constants=None, setup=None):
    """The serving model's prediction for one sweep point, computed without the scorer: the file's own
    setup, its sweep's request count, the serving model's default constants unless given."""
    setup = setup or scoring.setup_for(spec, spec.predictions[0])
    n = spec.sweep.num_requests(concurrency) if concurrency else max(10, int(rate * 30))
    # a closed point's id (measure/plan/points.py) seeds its clients' turnaround draws, as the scorer passes it
    pid = {"point_id": f"closed-c{concurrency}"} if concurrency else {}
    wl = sv.workload_for_point(setup, concurrency=concurrency, rate_req_per_s=rate, num_requests=n, **pid)
    return sv.simulate(setup, wl, constants=constants or sv.default_constants(setup))


# ------------------------------------------------------------------------------------------------ the format
def test_serving_section_sets_constants_with_units(tmp_path: Path) -> None:
    spec = _spec(tmp_path, """\
serving: {hbm_efficiency: 70%, step_overhead: 3.3 ms, per_seq_overhead_s: 20 us, host_mem_bytes_per_s: 20 GB/s}
predictions:
  - {id: w, quantity: weight_bytes, predicted: 16.38 GB}
""")
    assert spec.serving_overrides == pytest.approx({"hbm_efficiency": 0.70, "step_overhead_s": 3.3e-3,
                                                    "per_seq_overhead_s": 20e-6, "host_mem_bytes_per_s": 20e9})


@pytest.mark.parametrize("line, message, fix", [
    ("serving: {hbm_eficiency: 0.8}", "unknown key 'hbm_eficiency'", "did you mean 'hbm_efficiency'"),
    ("serving: {flop_efficiency: 120%}", "not a share of the peak", "80%"),
    ("serving: {step_overhead: 3.3}", "does not fit a time quantity", "500 ms"),
    ("serving: {step_overhead: 3 ms, step_overhead_s: 2 ms}", "given twice", "keep one"),
    ("model_column: servng", "'servng' is not one of roofline, serving", "did you mean 'serving'"),
])
def test_bad_serving_keys_are_reported_at_their_line(tmp_path: Path, line: str, message: str, fix: str) -> None:
    text = BASE + line + "\npredictions:\n  - {id: w, quantity: weight_bytes, predicted: 16.38 GB}\n"
    with pytest.raises(SpecError) as exc:
        loads_spec(text, file="x.yaml")
    assert exc.value.line == 6  # the line of the bad key, after the five setup lines
    assert message in str(exc.value) and fix in str(exc.value)


def test_schema_describes_the_new_keys() -> None:
    props = json_schema()["properties"]
    assert props["model_column"]["enum"] == ["roofline", "serving"]
    assert {"hbm_efficiency", "step_overhead", "step_overhead_s", "per_seq_overhead"} <= set(
        props["serving"]["properties"])
    assert props["calibration"]["type"] == "string"


def _write_calibration(path: Path, *, hardware: str = "a100-sxm4-80gb", step_overhead_s: float = 5e-3) -> None:
    cal = calibration.Calibration(
        hardware_id=hardware, model_name="qwen3-8b", engine_name="vllm", engine_version="0.26.0", input_len=1024,
        output_len=1024, constants={"hbm_efficiency": 0.7, "step_overhead_s": step_overhead_s},
        fitted=("hbm_efficiency", "step_overhead_s"), uncertainty={"hbm_efficiency": 0.01, "step_overhead_s": 1e-4})
    calibration.dump_calibration(cal, path)


def test_calibration_path_is_relative_to_the_file_and_its_constants_are_used(tmp_path: Path) -> None:
    (tmp_path / "cal").mkdir()
    _write_calibration(tmp_path / "cal" / "a100.yaml")
    spec = _spec(tmp_path, """\
calibration: cal/a100.yaml
predictions:
  - {id: tput, quantity: output_throughput, at: {concurrency: 8}, predicted: model}
""")
    assert spec.warnings == []  # fitted on this very setup
    setup = scoring.setup_for(spec, spec.predictions[0])
    v = scoring.score(spec, spec.predictions[0], "math")
    # a fitted hbm_efficiency moves the KV reads' bandwidth with it (ServingConstants.with_fitted, issue 22)
    constants = sv.default_constants(setup).with_fitted(hbm_efficiency=0.7, step_overhead_s=5e-3)
    expected = _direct(spec, concurrency=8, constants=constants).output_throughput_tok_per_s
    assert v.serving_value == pytest.approx(expected)
    assert v.model_source == "serving" and "calibration a100.yaml" in v.model_inputs["serving_model"]
    # the file's own serving: section overrides the calibration
    spec2 = _spec(tmp_path, """\
calibration: cal/a100.yaml
serving: {step_overhead: 1 ms}
predictions:
  - {id: tput, quantity: output_throughput, at: {concurrency: 8}, predicted: model}
""", name="q.yaml")
    v2 = scoring.score(spec2, spec2.predictions[0], "math")
    assert v2.serving_value == pytest.approx(
        _direct(spec2, concurrency=8, constants=constants.replace(step_overhead_s=1e-3)).output_throughput_tok_per_s)


def test_calibration_of_another_setup_warns_naming_what_differs(tmp_path: Path) -> None:
    _write_calibration(tmp_path / "h100.yaml", hardware="h100-sxm")
    with pytest.warns(CalibrationMismatchWarning, match="hardware: calibrated on h100-sxm, used on a100-sxm4-80gb"):
        spec = _spec(tmp_path, "calibration: h100.yaml\npredictions:\n"
                               "  - {id: w, quantity: weight_bytes, predicted: 16.38 GB}\n")
    assert spec.warnings and "p.yaml:6" in spec.warnings[0]
    from pytest_roofline.report.scorecard import render_scorecard, score_spec

    html = render_scorecard(spec, score_spec(spec, None), [], mode="math")
    assert "calibrated on h100-sxm, used on a100-sxm4-80gb" in html and "calibration h100.yaml" in html


def test_missing_calibration_file_is_an_error_at_its_line(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as exc:
        _spec(tmp_path, "calibration: nowhere.yaml\npredictions:\n  - {id: w, quantity: weight_bytes, "
                        "predicted: 16.38 GB}\n")
    assert exc.value.line == 6 and "nowhere.yaml" in str(exc.value) and "roofline calibrate" in str(exc.value)


# ----------------------------------------------------------------------------------------------- the scorer
def test_column_model_rules() -> None:
    cm = scoring.column_model
    # default: the roofline for ink it computes, the serving model for the rest and for predicted: model
    assert cm("auto", model_prediction=False, roofline=True, serving=True) == "roofline"
    assert cm("auto", model_prediction=False, roofline=False, serving=True) == "serving"
    assert cm("auto", model_prediction=True, roofline=True, serving=True) == "serving"
    # ... but CPU-only mode checks ink against the serving model only when the file asks for it
    assert cm("auto", model_prediction=False, roofline=False, serving=True, math_mode=True) == ""
    assert cm("serving", model_prediction=False, roofline=True, serving=True, math_mode=True) == "serving"
    assert cm("serving", model_prediction=False, roofline=True, serving=False) == "roofline"
    assert cm("roofline", model_prediction=False, roofline=False, serving=True) == ""
    assert cm("roofline", model_prediction=True, roofline=False, serving=True) == "serving"


def test_predicted_model_takes_the_serving_value_for_the_point(tmp_path: Path) -> None:
    spec = _spec(tmp_path, """\
predictions:
  - {id: ttft, quantity: ttft_p99, at: {concurrency: 8}, predicted: model}
  - {id: itl, quantity: itl_p99, at: {concurrency: 8}, predicted: model}
  - {id: tput, quantity: output_throughput, at: {concurrency: 8}, predicted: model}
""")
    direct = _direct(spec, concurrency=8)
    ttft, itl, tput = (scoring.score(spec, p, "math") for p in spec.predictions)
    assert ttft.model_value == pytest.approx(direct.ttft_p99_ms / 1e3) and ttft.model_source == "serving"
    assert itl.model_value == pytest.approx(direct.itl_p99_ms / 1e3)
    assert tput.model_value == pytest.approx(direct.output_throughput_tok_per_s)
    # both models carried where both exist: the roofline's B ÷ t_step at B = 8 beside the serving value
    assert tput.roofline_value == pytest.approx(8 / scoring.qreg._step(scoring.setup_for(spec, spec.predictions[2]),
                                                                        {"batch": 8}).t_step_s)
    assert tput.serving_value == tput.model_value != tput.roofline_value


def test_default_column_keeps_cpu_only_checks_and_names_the_serving_value(tmp_path: Path) -> None:
    spec = _spec(tmp_path, """\
predictions:
  - {id: ttft, quantity: ttft_p99, at: {concurrency: 8}, predicted: 90 ms}
  - {id: tput, quantity: output_throughput, at: {concurrency: 8}, predicted: 900 tok/s}
  - {id: ttft50, quantity: ttft_p50, at: {concurrency: 8}, predicted: 90 ms}
""")
    ttft, tput, ttft50 = (scoring.score(spec, p, "math") for p in spec.predictions)
    # a p99 has no band (the corpus bands p50s): the default column skips it, naming the serving value
    assert ttft.status == "skip" and "the serving model predicts" in ttft.reason
    assert "model_column: serving" in ttft.reason
    assert ttft.serving_value == pytest.approx(_direct(spec, concurrency=8).ttft_p99_ms / 1e3)
    assert tput.model_source == "roofline" and tput.status == "fail"  # 900 is not the roofline's B ÷ t_step
    # a TTFT p50 has a band: whatever the column, the CPU-only check reads the ink against it (issue 22)
    assert ttft50.serving_value == pytest.approx(_direct(spec, concurrency=8).ttft_p50_ms / 1e3)
    inside = ttft50.serving_band_lo <= 0.090 <= ttft50.serving_band_hi
    assert ttft50.status == ("pass" if inside else "fail") and ttft50.tolerance_text.startswith("serving band ")


def test_model_column_serving_checks_ink_within_the_measured_band(tmp_path: Path) -> None:
    spec0 = _spec(tmp_path, "predictions:\n  - {id: x, quantity: weight_bytes, predicted: 16.38 GB}\n")
    p99 = _direct(spec0, concurrency=8).ttft_p99_ms
    inside, outside = p99 * 1.15, p99 * 1.3
    spec = _spec(tmp_path, f"""\
model_column: serving
predictions:
  - {{id: near, quantity: ttft_p99, at: {{concurrency: 8}}, predicted: {inside:.1f} ms, tolerance: ±20%}}
  - {{id: far, quantity: ttft_p99, at: {{concurrency: 8}}, predicted: {outside:.1f} ms, tolerance: ±20%}}
""", name="q.yaml")
    near, far = (scoring.score(spec, p, "math") for p in spec.predictions)
    assert near.status == "pass" and far.status == "fail"
    assert near.tolerance_text == "±20%" and "serving model" in near.reason


def test_serving_overrides_move_the_value_by_the_mechanism(tmp_path: Path) -> None:
    """At batch 1 every decode step carries the per-step overhead once: TPOT moves by exactly the difference."""
    def tpot(overhead: str) -> float:
        spec = _spec(tmp_path, f"""\
serving: {{step_overhead: {overhead}}}
predictions:
  - {{id: t, quantity: tpot_p50, at: {{concurrency: 1}}, predicted: model}}
""", name=f"o{overhead.split()[0]}.yaml")
        return scoring.score(spec, spec.predictions[0], "math").model_value

    assert tpot("10 ms") - tpot("0 ms") == pytest.approx(10e-3, rel=1e-6)


def test_the_sweep_is_simulated_once_per_point_not_per_prediction(tmp_path: Path, monkeypatch) -> None:
    calls: list[tuple] = []
    real = sv.simulate

    def counting(setup, workload, **kw):
        calls.append((workload.concurrency, workload.rate_req_per_s))
        return real(setup, workload, **kw)

    monkeypatch.setattr(sv, "simulate", counting)
    spec = _spec(tmp_path, """\
predictions:
  - {id: a, quantity: ttft_p99, at: {concurrency: every}, predicted: model}
  - {id: b, quantity: tpot_p50, at: {concurrency: every}, predicted: model}
  - {id: c, quantity: ttft_knee_concurrency, predicted: model}
  - {id: d, quantity: goodput, at: {percentile: p99, ttft: 500 ms, tpot: 50 ms}, predicted: model}
  - {id: e, quantity: itl_p99, at: {concurrency: 32}, predicted: model}
""")
    for p in spec.predictions:
        scoring.score(spec, p, "math")
    assert sorted(calls) == [(1, None), (8, None), (32, None)]  # the two swept points, and C = 32 on demand


def test_a_measured_miss_names_the_term_that_dominates_it() -> None:
    spec = load_spec(DAY3)
    meas = RecordedMeasurement(load_results(DAY3_RESULTS), source="test")
    pred = next(p for p in spec.predictions if p.id == "throughput-c128")
    v = scoring.score(spec, pred, "measured", meas)
    assert v.status == "fail" and v.model_source == "roofline"  # the notebook's ink, from the roofline
    shares = _direct(spec, concurrency=128, setup=scoring.setup_for(spec, pred)).time_shares
    top = max(shares, key=shares.get)
    extra = max((k for k in shares if k not in ("weights", "kv", "decode_compute")), key=shares.get)
    text = " ".join(v.diagnosis)
    assert f"dominated by {TERM_LABELS[top]}" in text
    assert f"the decode roofline leaves out {TERM_LABELS[extra]}" in text
    assert "serving" in v.explain() and v.serving_text in v.explain()


# ------------------------------------------------------------------------------------------------ the reports
@pytest.mark.slow
def test_terminal_table_shows_both_models(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # the two models' columns are the first to give way on a narrow terminal (report/terminal.py): at 120 they show
    monkeypatch.setenv("COLUMNS", "120")
    pytester.path.joinpath("d.roofline.yaml").write_text(DAY3.read_text(encoding="utf-8"), encoding="utf-8")
    result = pytester.runpytest_subprocess(*NO_HTML, "--replay",
                                           str(DAY3_RESULTS), "-k", "throughput-c16")
    head = next(line for line in result.outlines if line.startswith("id "))
    assert "roofline" in head and "serving" in head
    row = next(line for line in result.outlines if line.startswith("throughput-c16"))
    spec = load_spec(DAY3)
    pred = next(p for p in spec.predictions if p.id == "throughput-c16")
    serving = _direct(spec, concurrency=16, setup=scoring.setup_for(spec, pred)).output_throughput_tok_per_s
    assert f"{serving:,.1f}"[:5] in row and "1,740.8" in row  # the roofline's B ÷ t_step at 16


def test_html_cells_carry_both_models() -> None:
    from pytest_roofline.pytest_plugin.html import COLUMNS, row_cells

    spec = load_spec(DAY3)
    meas = RecordedMeasurement(load_results(DAY3_RESULTS), source="test")
    v = scoring.score(spec, next(p for p in spec.predictions if p.id == "throughput-c64"), "measured", meas)
    cells = dict(zip([k for k, _, _ in COLUMNS], row_cells(v), strict=True))
    assert v.roofline_text in cells["rl_roofline"] and v.serving_text in cells["rl_serving"]


def test_scorecard_draws_the_serving_curve_and_tabulates_it(tmp_path: Path) -> None:
    from pytest_roofline.report.scorecard import render_from_files

    html = render_from_files(DAY3, DAY3_RESULTS)
    assert "serving model (step-level vLLM simulation)" in html  # the throughput chart's legend
    assert "serving model p99" in html and "serving model p50 TPOT" in html
    spec = load_spec(DAY3)
    c128 = _direct(spec, concurrency=128, setup=scoring.setup_for(spec, spec.predictions[0]))
    assert f"{c128.output_throughput_tok_per_s:,.0f}" in html  # the sweep table's serving column


@pytest.mark.slow
def test_day3_experiments_pass_against_the_serving_model(pytester: pytest.Pytester) -> None:
    """The notebook's four experiments (the 8k arm's measured claims in their own file, whose sweep sends 8k
    requests), CPU-only: every ink value agrees with the serving model."""
    for name in ("day3-experiments", "day3-experiments-8k"):
        src = PREDICTIONS / f"{name}.yaml"
        pytester.path.joinpath(f"{name}.roofline.yaml").write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    result = pytester.runpytest_subprocess(*NO_HTML, "--junitxml", "j.xml")
    outcomes = result.parseoutcomes()
    assert outcomes == {"passed": 18}, result.stdout.str()[-3000:]


@pytest.mark.slow
def test_day3_experiments_mechanisms_hold_in_the_serving_model() -> None:
    """The claims behind the file's ink, recomputed from direct simulations."""
    spec = load_spec(PREDICTIONS / "day3-experiments.yaml")
    spec8k = load_spec(PREDICTIONS / "day3-experiments-8k.yaml")
    by_id = {p.id: p for p in spec.predictions}
    base = scoring.setup_for(spec, by_id["knee-1k"])
    at8k = scoring.setup_for(spec8k, next(p for p in spec8k.predictions if p.id == "knee-8k"))
    from pytest_roofline.quantities.analysis import throughput_knee

    def knee(setup) -> float | None:
        pts = [(c, _direct(spec, concurrency=c, setup=setup).output_throughput_tok_per_s)
               for c in spec.sweep.concurrency]
        return throughput_knee(pts, spec.thresholds.knee_gain)

    k1, k8 = knee(base), knee(at8k)
    assert k8 is not None and (k1 is None or k8 < k1)  # the 8k curve flattens earlier
    assert _direct(spec, concurrency=256, setup=base).preemptions > 0 == _direct(
        spec, concurrency=128, setup=base).preemptions
    chunked = scoring.setup_for(spec, by_id["itl-p99-budget-512"])
    assert chunked.max_num_batched_tokens == 512 and base.max_num_batched_tokens == 2048
    c_itl = _direct(spec, concurrency=128, setup=chunked).itl_p99_ms
    b_itl = _direct(spec, concurrency=128, setup=base).itl_p99_ms
    assert c_itl < b_itl  # chunking spreads the prefill stall
    closed = _direct(spec, concurrency=32, setup=base)
    # the file's "same nominal load": 1.80 req/s with the pre-issue-22 defaults, 1.68 since the KV reads run at
    # 0.68 of the bandwidth and the API server's time is simulated (within 10%)
    assert closed.request_throughput_req_per_s == pytest.approx(1.8, rel=0.10)
    assert _direct(spec, rate=1.8, setup=base).ttft_p99_ms < closed.ttft_p99_ms


def test_verdict_json_carries_both_models(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "predictions:\n  - {id: t, quantity: output_throughput, at: {concurrency: 8}, "
                           "predicted: 900 tok/s}\n")
    d = scoring.score(spec, spec.predictions[0], "math").to_dict()
    json.dumps(d)  # travels on a pytest report
    assert d["model_source"] == "roofline" and d["roofline_text"] and d["serving_text"]
    assert set(d["serving_shares"]) >= {"weights", "kv", "prefill_compute", "overhead"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sum(d["serving_shares"].values()) == pytest.approx(1.0, abs=1e-6)


def test_predicted_model_is_scored_against_the_measurement_with_the_serving_value(tmp_path: Path) -> None:
    """A replayed run: `predicted: model` of a measured-only quantity puts the serving model's value in ink."""
    head = DAY3.read_text(encoding="utf-8").split("\npredictions:")[0] + "\npredictions:\n"
    path = tmp_path / "d.yaml"
    path.write_text(head + "  - {id: t, quantity: tpot_p50, at: {concurrency: 128}, predicted: model, "
                           "tolerance: ±25%}\n", encoding="utf-8")
    spec = load_spec(path)
    meas = RecordedMeasurement(load_results(DAY3_RESULTS), source="test")
    v = scoring.score(spec, spec.predictions[0], "measured", meas)
    expected = _direct(spec, concurrency=128).tpot_p50_ms / 1e3
    assert v.reference_value == pytest.approx(expected) and v.model_source == "serving"
    assert v.measured_value == pytest.approx(41.0e-3)  # the notebook's C = 128 TPOT p50
    inside = abs(expected - 41.0e-3) <= 0.25 * expected
    assert v.status == ("pass" if inside else "fail")


def test_a_decode_batch_stays_the_rooflines(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "predictions:\n  - {id: t, quantity: output_throughput, at: {batch: 64}, "
                           "predicted: model}\n")
    v = scoring.score(spec, spec.predictions[0], "math")
    assert v.model_source == "roofline" and v.serving_value is None and v.serving_text == ""
    assert "one decode step" in v.serving_explanation


def test_a_chip_without_roofline_figures_still_gets_the_serving_curve() -> None:
    """The CPU pseudo-device has no bandwidth/peak in the catalog: no roofline curve, but the serving model runs."""
    from pytest_roofline.report.scorecard import render_from_files

    html = render_from_files(PREDICTIONS / "cpu-preemption.yaml")
    start = html.index('id="spec0-throughput"')
    figure = html[start:html.index("</figure>", start)]
    assert "serving model (step-level vLLM simulation)" in figure


def test_per_request_chart_draws_the_serving_models_curve() -> None:
    """The per-request chart carries the serving model's mean per-request tok/s (output ÷ E2E, as measured) at
    every swept concurrency, beside the roofline's 1 ÷ t_step, which has no prefill and no overhead."""
    from pytest_roofline.report import charts

    spec = load_spec(DAY3)
    setup = scoring.setup_for(spec, spec.predictions[0])
    fig = charts.per_request_chart(spec, setup, load_results(DAY3_RESULTS), [])
    assert fig is not None
    # the serving line has no band, and says so with why (trial s18 M2): no public source reports per-request tok/s
    assert "serving model (step-level vLLM simulation; no band)" in fig.svg
    assert "no public source of the accuracy corpus reports per-request tok/s" in fig.svg
    for c in (1, 8, 128):
        direct = _direct(spec, concurrency=c, setup=setup)
        assert f"C={c}: serving model {direct.per_request_output_tok_per_s:,.1f} tok/s per request" in fig.svg
        # one request's stream pays its TTFT and every step's overhead: below the decode roofline's 1 / t_step
        assert direct.per_request_output_tok_per_s < charts.model_step(setup, c).per_request_tok_per_s
    assert "Serving model (dashed green)" in fig.caption
