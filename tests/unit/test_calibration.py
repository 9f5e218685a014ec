"""Calibration: the fit recovers known constants, refuses unidentifiable input, the file round-trips, mismatches
name what differs, and `roofline calibrate` works end to end on a recorded results file."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import ClassVar

import pytest
from support.calibration_standin import StandIn
from support.paths import DAY3_RESULTS, RECORDED, REPO
from support.recordings import load_recording, recording_path

from pytest_roofline.errors import CalibrationError
from pytest_roofline.model import calibration as cal
from pytest_roofline.model.calibration import MeasuredPoint

# --------------------------------------------------------------------------------------------------------------
# a stand-in with a closed form, so the optimiser and the identifiability test are checked on their own
# --------------------------------------------------------------------------------------------------------------
WEIGHTS_S = 0.01  # weight read at peak bandwidth per step
KV_S_PER_SEQ = 1e-4  # one sequence's KV read at peak
PREFILL_S = 0.02  # one prompt's prefill at peak FLOP/s
OUT_LEN = 256


def stand_in(c: StandIn, p: MeasuredPoint) -> dict[str, float]:
    b = p.concurrency
    t_step = (WEIGHTS_S + b * KV_S_PER_SEQ) / c.hbm_efficiency + c.step_overhead_s + b * c.per_seq_overhead_s
    ttft = PREFILL_S / c.flop_efficiency + c.step_overhead_s
    e2e = ttft + (OUT_LEN - 1) * t_step
    return {"output_throughput_tok_per_s": b * OUT_LEN / e2e, "tpot_p50_ms": 1e3 * t_step, "ttft_p50_ms": 1e3 * ttft}


def points_from(predict, constants, loads) -> list[MeasuredPoint]:
    out = []
    for b in loads:
        probe = MeasuredPoint(id=f"closed-c{b}", concurrency=b)
        out.append(dataclasses.replace(probe, **predict(constants, probe)))
    return out


def test_standin_fit_recovers_known_constants():
    truth = StandIn(hbm_efficiency=0.62, flop_efficiency=0.45, step_overhead_s=3.3e-3, per_seq_overhead_s=1.2e-4)
    pts = points_from(stand_in, truth, [1, 64])
    fields = ("flop_efficiency", "step_overhead_s", "per_seq_overhead_s")
    res = cal.fit(pts, StandIn(hbm_efficiency=0.62), predict=stand_in, fields=fields)
    for name in fields:
        assert res.values[name] == pytest.approx(getattr(truth, name), rel=0.02), name
    assert res.rms_log_residual < 1e-3
    for p in res.points:
        assert all(abs(r) < 1e-3 for r in p.residuals.values())
    text = res.describe()
    assert "step_overhead_s" in text and "C=64" in text


def test_standin_linear_confounding_is_refused_with_the_subset_that_fits():
    """TPOT(B) = (W + B·KV)/eff + step + B·per_seq is a line in B: two loads fix its intercept and slope, not
    three unknowns; TTFT adds flop_efficiency. Four unknowns, three independent values: refused."""
    pts = points_from(stand_in, StandIn(hbm_efficiency=0.62), [1, 64])
    with pytest.raises(CalibrationError) as ei:
        cal.fit(pts, StandIn(), predict=stand_in)
    msg = str(ei.value)
    named = msg.split(":")[0]
    assert "step_overhead_s" in named and "per_seq_overhead_s" in named
    assert "step_overhead_s is confounded with per_seq_overhead_s" in msg
    hint = msg.split("roofline calibrate --fit ")[1].split(")")[0].split(",")
    assert "flop_efficiency" in hint and not {"step_overhead_s", "per_seq_overhead_s"} <= set(hint)
    # the subset it proposes does fit
    res = cal.fit(pts, StandIn(), predict=stand_in, fields=hint)
    assert res.rms_log_residual < 1e-3


def test_standin_one_load_is_refused_naming_the_confounded_parameters():
    truth = StandIn()
    pts = points_from(stand_in, truth, [8])
    with pytest.raises(CalibrationError) as ei:
        cal.fit(pts, StandIn(step_overhead_s=1e-3), predict=stand_in,
                fields=("hbm_efficiency", "step_overhead_s", "per_seq_overhead_s"))
    msg = str(ei.value)
    # at one concurrency the step time is (W + B·KV)/eff + step + B·per_seq: a single number for three unknowns
    assert "cannot identify" in msg
    assert "one load" in msg
    assert "--fit" in msg


def test_standin_too_few_values():
    pts = [MeasuredPoint(id="closed-c1", concurrency=1, tpot_p50_ms=12.0)]
    # no TTFT: flop_efficiency is held at its default, three parameters remain for one value
    with pytest.raises(CalibrationError, match="cannot determine 3 parameters"):
        cal.fit(pts, StandIn(), predict=stand_in)


def test_standin_unknown_field():
    with pytest.raises(CalibrationError, match="unknown constant"):
        cal.fit([], StandIn(), predict=stand_in, fields=("hbm_eff",))


def test_standin_subset_fit_when_asked():
    """With --fit naming an identifiable subset, the others stay at the base value."""
    truth = StandIn(step_overhead_s=4e-3, per_seq_overhead_s=2e-4)
    pts = points_from(stand_in, truth, [1, 32])
    res = cal.fit(pts, StandIn(), predict=stand_in, fields=("step_overhead_s", "per_seq_overhead_s"))
    assert res.values["step_overhead_s"] == pytest.approx(4e-3, rel=0.02)
    assert res.values["per_seq_overhead_s"] == pytest.approx(2e-4, rel=0.02)
    assert res.constants.hbm_efficiency == StandIn().hbm_efficiency
    assert set(res.uncertainty) == {"step_overhead_s", "per_seq_overhead_s"}


def test_uncertainty_matches_the_linear_closed_form():
    """For y = a·x in log space (ln y = ln a + ln x) the 1σ of ln a is σ/√n (σ at the noise floor)."""

    @dataclasses.dataclass(frozen=True)
    class One:
        a: float = 1.0
        FIELDS_FITTABLE: ClassVar[tuple[str, ...]] = ("a",)

        def replace(self, **kw):
            return dataclasses.replace(self, **kw)

        def to_dict(self):
            return {"a": self.a}

    def lin(c, p):
        return {"output_throughput_tok_per_s": c.a * p.concurrency}

    pts = [MeasuredPoint(id=f"c{b}", concurrency=b, output_throughput_tok_per_s=3.0 * b) for b in (1, 2, 4, 8)]
    res = cal.fit(pts, One(), predict=lin)
    assert res.values["a"] == pytest.approx(3.0, rel=1e-6)
    assert res.log_sd["a"] == pytest.approx(cal.NOISE_FLOOR_LOG / math.sqrt(4), rel=1e-3)


def test_small_linear_algebra_against_numpy():
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(3)
    a = rng.normal(size=(5, 5))
    sym = a @ a.T + np.eye(5)
    b = rng.normal(size=5)
    x = cal._solve(sym.tolist(), b.tolist())
    assert np.allclose(x, np.linalg.solve(sym, b))
    ev, vec = cal._eigh(sym.tolist())
    assert np.allclose(sorted(ev), np.linalg.eigvalsh(sym))
    v = np.array(vec)
    assert np.allclose(v @ np.diag(ev) @ v.T, sym)


# --------------------------------------------------------------------------------------------------------------
# the calibration file
# --------------------------------------------------------------------------------------------------------------
def _cpu_setup(**changes):
    from pytest_roofline.model.setup import build_setup

    s = build_setup(hardware_ref="cpu", model_ref="roofline-tiny",
                    engine={"name": "vllm", "version": "0.32.0", "cpu_kvcache_space": 2**30,
                            "args": {"max_num_seqs": 8, "max_model_len": 1024, "dtype": "bfloat16"}},
                    workload={"input_len": 128, "output_len": 64})
    return s.with_changes(**changes) if changes else s


def _calibration(setup):
    truth = StandIn(step_overhead_s=4e-3, per_seq_overhead_s=2e-4)
    pts = points_from(stand_in, truth, [1, 32])
    res = cal.fit(pts, StandIn(), predict=stand_in, fields=("step_overhead_s", "per_seq_overhead_s"))
    return cal.calibration_from_fit(res, setup, sources=["x.results.json"], notes="test")


def test_file_round_trip(tmp_path):
    setup = _cpu_setup()
    c = _calibration(setup)
    path = tmp_path / "calib.yaml"
    cal.dump_calibration(c, path)
    back = cal.load_calibration(path)
    assert back.to_dict() == c.to_dict()
    cal.dump_calibration(back, tmp_path / "again.yaml")
    assert cal.load_calibration(tmp_path / "again.yaml") == back
    assert back.fitted == ("step_overhead_s", "per_seq_overhead_s")
    assert back.constants["step_overhead_s"] == pytest.approx(4e-3, rel=0.02)
    text = path.read_text()
    for word in ("hardware: cpu", "model: roofline-tiny", "version: 0.32.0", "input_len: 128", "uncertainty:",
                 "step_overhead_s", "created_at:", "points:"):
        assert word in text


def test_mismatches_name_what_differs():
    setup = _cpu_setup()
    c = _calibration(setup)
    assert c.mismatches(setup) == []
    other = setup.with_changes(input_len=1024, max_num_seqs=16, engine_version="0.26.0")
    msgs = c.mismatches(other)
    assert any("input_len: calibrated on 128, used on 1024" in m for m in msgs)
    assert any(m.startswith("max_num_seqs: calibrated on 8, used on 16") for m in msgs)
    assert any(m.startswith("engine version: calibrated on 0.32.0") for m in msgs)
    assert len(msgs) == 3
    from pytest_roofline.model.setup import build_setup

    a100 = build_setup(hardware_ref="a100-sxm4-80gb", model_ref="qwen3-8b", engine={"version": "0.26.0"},
                       workload={"input_len": 128, "output_len": 64})
    msgs = c.mismatches(a100)
    assert any(m.startswith("hardware: calibrated on cpu, used on a100-sxm4-80gb") for m in msgs)
    assert any(m.startswith("model: calibrated on roofline-tiny, used on qwen3-8b") for m in msgs)
    assert any(m.startswith("device: calibrated on cpu, used on cuda") for m in msgs)


@pytest.mark.parametrize("text, match", [
    ("[1, 2]", "is a mapping"),
    ("schema: other\n", "not a calibration file"),
    ("schema: pytest-roofline/calibration\nschema_version: 1\nhardware: cpu\n", "malformed"),
    ("schema: pytest-roofline/calibration\nschema_version: 9\n", "newer"),
    ("a: [", "not valid YAML"),
])
def test_bad_files_are_refused_with_the_file_name(tmp_path, text, match):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(CalibrationError, match=match) as ei:
        cal.load_calibration(p)
    assert "bad.yaml" in str(ei.value)


def test_missing_file():
    with pytest.raises(CalibrationError, match="cannot read"):
        cal.load_calibration("/nonexistent/calib.yaml")


# --------------------------------------------------------------------------------------------------------------
# points from a results file
# --------------------------------------------------------------------------------------------------------------
def test_measured_points_from_the_day3_transcription():
    from pytest_roofline.measure.results import load_results
    from pytest_roofline.measure.results.calibration_points import measured_points, parse_point_selector, select_points

    doc = load_results(DAY3_RESULTS)
    pts = measured_points(doc)
    assert [p.concurrency for p in pts] == [1, 2, 4, 8, 16, 32, 64, 128]
    c64 = pts[6]
    assert (c64.output_throughput_tok_per_s, c64.tpot_p50_ms, c64.ttft_p50_ms) == (2504.6, 25.09, 519)
    assert c64.num_requests == 640 and c64.input_len == 1024
    sel = select_points(pts, parse_point_selector("C=1, C=64"))
    assert [p.label for p in sel] == ["C=1", "C=64"]
    with pytest.raises(CalibrationError, match="no measured point C=3"):
        select_points(pts, parse_point_selector("C=3"))
    with pytest.raises(CalibrationError, match="write C="):
        parse_point_selector("X=3")


# --------------------------------------------------------------------------------------------------------------
# the real serving model as the oracle: points simulated with known constants are fitted back
# --------------------------------------------------------------------------------------------------------------
def _simulated_points(setup, constants, loads, num_requests):
    from pytest_roofline.model import serving

    out = []
    for c, n in zip(loads, num_requests, strict=True):
        wl = serving.workload_for_point(setup, concurrency=c, num_requests=n)
        p = serving.simulate(setup, wl, constants=constants)
        out.append(MeasuredPoint(id=f"closed-c{c}", concurrency=c, num_requests=n,
                                 output_throughput_tok_per_s=p.output_throughput_tok_per_s,
                                 tpot_p50_ms=p.tpot_p50_ms, ttft_p50_ms=p.ttft_p50_ms))
    return out


def test_serving_fit_recovers_cpu_overheads():
    from pytest_roofline.model import serving

    setup = _cpu_setup()
    base = serving.default_constants(setup)
    truth = base.replace(step_overhead_s=3.1e-3, per_seq_overhead_s=160e-6)
    pts = _simulated_points(setup, truth, [1, 16], [8, 64])
    res = cal.fit(pts, base, predict=cal.serving_predictor(setup), fields=("step_overhead_s", "per_seq_overhead_s"))
    assert res.values["step_overhead_s"] == pytest.approx(3.1e-3, rel=0.03)
    assert res.values["per_seq_overhead_s"] == pytest.approx(160e-6, rel=0.10)
    assert res.rms_log_residual < 0.01
    # the starting point was off by 55% / 220%: the fit moved, and says how sure it is
    assert 0 < res.log_sd["step_overhead_s"] < cal.MAX_LOG_SD


def test_serving_fit_recovers_a100_bandwidth_and_step_overhead():
    """A100 + Qwen3-8B, shortened workload: hbm_efficiency and step_overhead_s are separable from C=1 and C=64
    because the KV read at C=64 scales with 1/efficiency but not with the per-step overhead — but only weakly."""
    from pytest_roofline.model import serving
    from pytest_roofline.model.setup import build_setup

    setup = build_setup(hardware_ref="a100-sxm4-80gb", model_ref="qwen3-8b",
                        engine={"name": "vllm", "version": "0.26.0"},
                        workload={"input_len": 1024, "output_len": 128})
    base = serving.default_constants(setup)
    # a slower memory system: the weights' 0.8 -> 0.68 and the KV reads' 0.68 with it (with_fitted keeps their
    # ratio, the calibration's own rule)
    truth = base.with_fitted(hbm_efficiency=0.68, step_overhead_s=2.4e-3)
    assert truth.kv_bw_efficiency == pytest.approx(0.68 * 0.68 / 0.8)
    pts = _simulated_points(setup, truth, [1, 64], [2, 64])
    fields = ("hbm_efficiency", "step_overhead_s")
    # at the default 5% measurement-noise floor two TPOTs pin the overhead only to about ±3 ms: refused
    with pytest.raises(CalibrationError, match="step_overhead_s is determined only to"):
        cal.fit(pts, base, predict=cal.serving_predictor(setup), fields=fields)
    # accepting that uncertainty, the fit lands on the oracle's values (the points are noise-free)
    res = cal.fit(pts, base, predict=cal.serving_predictor(setup), fields=fields, max_log_sd=3.0)
    assert res.values["hbm_efficiency"] == pytest.approx(0.68, rel=0.03)
    assert res.values["step_overhead_s"] == pytest.approx(2.4e-3, rel=0.05)
    assert res.log_sd["step_overhead_s"] > cal.MAX_LOG_SD > res.log_sd["hbm_efficiency"]


def test_serving_fit_one_load_is_refused():
    from pytest_roofline.model import serving

    setup = _cpu_setup()
    base = serving.default_constants(setup)
    pts = _simulated_points(setup, base.replace(step_overhead_s=3e-3), [8], [32])
    with pytest.raises(CalibrationError) as ei:
        cal.fit(pts, base, predict=cal.serving_predictor(setup),
                fields=("step_overhead_s", "per_seq_overhead_s", "hbm_efficiency"))
    assert "All points run at one load" in str(ei.value)
    assert ei.value.unidentified  # the names, for a caller to act on


# --------------------------------------------------------------------------------------------------------------
# the CLI, end to end on a recorded CPU-engine run
# --------------------------------------------------------------------------------------------------------------
CPU_TINY_RUN = recording_path("cpu-tiny")


@pytest.mark.skipif(not CPU_TINY_RUN.exists(), reason="the cpu-tiny recording is not in predictions/recorded/")
def test_cli_calibrate_end_to_end(tmp_path, capsys, monkeypatch):
    from pytest_roofline import cli

    monkeypatch.chdir(REPO)  # the results file names its prediction file relative to the repository
    out = tmp_path / "calib" / "calib.yaml"  # a folder that does not exist yet is made (trial s26c #5)
    rc = cli.main(["calibrate", str(CPU_TINY_RUN), "--points", "C=1,C=16", "--joint", "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and not out.exists()  # every fittable field at once: refused, with the reason and the way out
    assert "cannot identify" in err and "--fit " in err
    subset = err.split("--fit ")[1].split(")")[0]
    rc = cli.main(["calibrate", str(CPU_TINY_RUN), "--points", "C=1,C=16", "--joint", "--fit", subset, "-o",
                   str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "fitted constants" in text and "residuals per point" in text and "C=16" in text
    for name in subset.split(","):
        assert name in text
    c = cal.load_calibration(out)
    assert c.fitted == tuple(subset.split(","))
    assert c.hardware_id == "cpu" and c.model_name == "roofline-tiny" and c.engine_version == "0.32.0"
    assert (c.input_len, c.output_len) == (128, 64)
    assert [p["label"] for p in c.points] == ["C=1", "C=16"]
    assert c.sources == (str(CPU_TINY_RUN),)
    assert c.mismatches(_cpu_setup()) == []
    assert set(c.uncertainty) == set(c.fitted)


def test_cli_calibrate_bad_selector(capsys, monkeypatch):
    from pytest_roofline import cli

    monkeypatch.chdir(REPO)
    rc = cli.main(["calibrate", str(DAY3_RESULTS), "--points", "C=3"])
    assert rc == 2
    assert "no measured point C=3" in capsys.readouterr().err


def test_serving_constants_take_the_fitted_values_only():
    from pytest_roofline.model import serving

    setup = _cpu_setup()
    c = cal.Calibration(hardware_id="cpu", model_name="roofline-tiny", engine_name="vllm", engine_version="0.32.0",
                        input_len=128, output_len=64,
                        constants={"step_overhead_s": 4e-3, "per_seq_overhead_s": 1e-4, "hbm_efficiency": 0.5},
                        fitted=("step_overhead_s",), uncertainty={"step_overhead_s": 1e-4})
    got = c.serving_constants(setup)
    want = serving.default_constants(setup).replace(step_overhead_s=4e-3)
    assert got == want


# --------------------------------------------------------------------------------------------------------------
# the recorded CPU-engine runs: what each was recorded to show is in the file, and each replays green
# --------------------------------------------------------------------------------------------------------------


def test_kv_pressure_recording_preempts_past_the_pool():
    doc = load_recording("cpu-kv-pressure")
    assert doc["engine_report"]["num_gpu_blocks"] == 1572864 // (128 * 512)  # 24 blocks of 128 × 512 B
    pre = {p["concurrency"]: p["server"]["preemptions"] for p in doc["points"]}
    # 4 requests × ceil(640 / 128) = 20 blocks fit 24; 8 and 16 outgrow it mid-decode
    assert all(pre[c] == 0 for c in (1, 2, 4))
    assert pre[8] > 0 and pre[16] > pre[8]
    log = (RECORDED / "cpu-kv-pressure-2026-12-05.engine-kv.log").read_text()
    assert "CPU KV cache size: 3,072 tokens" in log
    assert "'kv_cache_memory_bytes': 1572864" in log


def test_prefill_heavy_and_open_loop_recordings_are_what_they_say():
    ph = load_recording("cpu-prefill-heavy")
    assert {(p["input_len"], p["output_len"]) for p in ph["points"]} == {(896, 8)}
    ol = load_recording("cpu-open-loop")
    assert [p["mode"] for p in ol["points"]] == ["open"] * len(ol["points"])
    assert [p["rate_req_s"] for p in ol["points"]] == [2, 4, 8, 12, 16, 24]
    for doc in (ph, ol, load_recording("cpu-tiny"), load_recording("cpu-kv-pressure")):
        assert "load average" in doc["setup"]["engine"]["notes"]  # the shared machine's load, noted
        assert (RECORDED / doc["setup"]["engine"]["log_file"]).exists()




def test_cli_calibrate_refuses_results_of_different_setups(capsys, monkeypatch):
    from pytest_roofline import cli

    if not CPU_TINY_RUN.exists():
        pytest.skip("the cpu-tiny recording is not in predictions/recorded/")
    monkeypatch.chdir(REPO)
    rc = cli.main(["calibrate", str(CPU_TINY_RUN), str(DAY3_RESULTS)])
    assert rc == 2
    assert "not of one setup" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------------------
# prefix-cache hits: simulated where recorded, and a contaminated point's TTFT stays out of the fit
# --------------------------------------------------------------------------------------------------------------
def _tiny_cpu_setup():
    from pytest_roofline.model.setup import build_setup

    return build_setup(hardware_ref="cpu", model_ref="roofline-tiny",
                       engine={"name": "vllm", "version": "0.32.0", "cpu_kvcache_space": 2**30,
                               "args": {"max_num_seqs": 8, "max_model_len": 1024, "enable_prefix_caching": True}},
                       workload={"input_len": 128, "output_len": 64})


def test_contamination_threshold_is_the_analysis_layers():
    from pytest_roofline.quantities.analysis import Thresholds

    assert cal.CONTAMINATION == Thresholds().contamination


def test_measured_points_carry_the_servers_hit_rate():
    from pytest_roofline.measure.results import load_results
    from pytest_roofline.measure.results.calibration_points import measured_points

    pts = {p.label: p for p in measured_points(load_results(DAY3_RESULTS))}
    # the notebook's post-hoc audit, as transcribed: 58% (midpoint of 50-66%) for C = 2..32, 30% at C = 64
    assert pts["C=1"].prefix_cache_hit_rate is None
    assert pts["C=8"].prefix_cache_hit_rate == 0.58 and pts["C=64"].prefix_cache_hit_rate == 0.30
    assert pts["C=128"].prefix_cache_hit_rate == pytest.approx(0.0035)


def test_screen_points_drops_a_contaminated_ttft_and_keeps_the_averages():
    setup = _tiny_cpu_setup()
    hit = MeasuredPoint(id="c", concurrency=4, output_throughput_tok_per_s=500.0, tpot_p50_ms=6.0, ttft_p50_ms=20.0,
                        prefix_cache_hit_rate=0.30)
    clean = dataclasses.replace(hit, id="d", prefix_cache_hit_rate=0.05)
    unknown = dataclasses.replace(hit, id="e", prefix_cache_hit_rate=None)
    out, notes = cal.screen_points([hit, clean, unknown], setup)
    assert out[0].ttft_p50_ms is None
    assert (out[0].output_throughput_tok_per_s, out[0].tpot_p50_ms) == (500.0, 6.0)
    assert out[1].ttft_p50_ms == 20.0 and out[2].ttft_p50_ms == 20.0
    assert len(notes) == 1 and "30.0% > 10%" in notes[0]
    out, _ = cal.screen_points([hit], setup, contamination=0.5)  # the file's own threshold, when it sets one
    assert out[0].ttft_p50_ms == 20.0


def test_serving_predictor_simulates_the_recorded_hit_rate():
    from pytest_roofline.model import serving
    from pytest_roofline.model.setup import build_setup

    # an A100 prefill of 1,024 tokens is compute-bound (~16 TFLOP), so the cached half of it shows in TTFT
    setup = build_setup(hardware_ref="a100-sxm4-80gb", model_ref="qwen3-8b",
                        engine={"name": "vllm", "version": "0.26.0"}, workload={"input_len": 1024, "output_len": 16})
    assert serving.EngineConfig.from_setup(setup).enable_prefix_caching  # V1's default
    pt = MeasuredPoint(id="closed-c2", concurrency=2, num_requests=6, prefix_cache_hit_rate=0.5)
    consts = serving.default_constants(setup)
    with_hits = cal.serving_predictor(setup)(consts, pt)
    without = cal.serving_predictor(setup, measured_hit_rates=False)(consts, pt)
    # the point's id seeds the load generator's draws and the clients' turnaround, as serving_predictor passes it
    direct = serving.simulate(setup, serving.workload_for_point(setup, concurrency=2, num_requests=6,
                                                                prefix_hit_rate=0.5, point_id=pt.id),
                              constants=consts)
    assert with_hits["ttft_p50_ms"] == direct.ttft_p50_ms
    assert with_hits["output_throughput_tok_per_s"] == direct.output_throughput_tok_per_s
    plain = serving.simulate(setup, serving.workload_for_point(setup, concurrency=2, num_requests=6, point_id=pt.id),
                             constants=consts)
    assert without["ttft_p50_ms"] == plain.ttft_p50_ms
    # half of each prompt's blocks cached: 512 tokens' linear FLOPs to compute instead of 1,024, so the prefill
    # part of TTFT roughly halves (the attention over the cached half is still paid)
    assert 0.4 < with_hits["ttft_p50_ms"] / without["ttft_p50_ms"] < 0.75


def test_without_a_usable_ttft_flop_efficiency_is_held_at_its_default():
    """Throughput at high load mixes the prefill share with every batch-dependent cost: with no TTFT (the day3
    fit once C=1's is below the compute floor and C=64's is contaminated) a per-sequence cost the base
    underestimates must not be charged to flop_efficiency."""
    truth = StandIn(hbm_efficiency=0.62, per_seq_overhead_s=1.2e-4)  # per-seq cost 2.4x the base's
    pts = [dataclasses.replace(p, ttft_p50_ms=None) for p in points_from(stand_in, truth, [1, 64])]
    with pytest.raises(CalibrationError) as ei:
        cal.fit(pts, StandIn(), predict=stand_in)
    assert "flop_efficiency" not in str(ei.value).split(":")[0]
    assert "flop_efficiency" not in ei.value.identifiable
    assert any("flop_efficiency kept at its default (0.7)" in n for n in ei.value.held_back)
    res = cal.fit(pts, StandIn(), predict=stand_in, fields=ei.value.identifiable)
    assert res.values.get("per_seq_overhead_s", truth.per_seq_overhead_s) == pytest.approx(1.2e-4, rel=0.05)
    # named explicitly, it is tried (the caller's choice), and here refused: one prefill in 256 steps barely
    # moves the throughput, so only TTFT could have measured it
    with pytest.raises(CalibrationError, match="cannot identify flop_efficiency"):
        cal.fit(pts, StandIn(hbm_efficiency=0.62, per_seq_overhead_s=1.2e-4), predict=stand_in,
                fields=("flop_efficiency",))
    # with a TTFT the rule does not apply
    with_ttft = points_from(stand_in, truth, [1, 64])
    with pytest.raises(CalibrationError) as ei2:
        cal.fit(with_ttft, StandIn(), predict=stand_in)
    assert not ei2.value.held_back


# --------------------------------------------------------------------------------------------------------------
# a hand-edited calibration file that would hang or exhaust memory (issue 23, case 9.53): refused, bounded
# --------------------------------------------------------------------------------------------------------------
def _alias_bomb(levels: int = 9, width: int = 9) -> str:
    lines = ["schema: pytest-roofline/calibration", "schema_version: 1", "notes:",
             "  l0: &l0 [" + ", ".join(["lol"] * width) + "]"]
    lines += [f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("case, match", [
    ("alias-bomb", "alias bomb"),
    ("deep-nesting", "nest more than 64 levels"),
    ("fifo", "a FIFO"),
    ("dev-zero", "character device"),
    ("huge", "larger than 4 MiB"),
])
def test_hostile_calibration_files_are_refused_in_bounded_time(tmp_path, case, match):
    import os
    import time

    p = tmp_path / "c.yaml"
    if case == "alias-bomb":
        p.write_text(_alias_bomb())
    elif case == "deep-nesting":
        p.write_text("schema: pytest-roofline/calibration\nnotes: " + "[" * 100_000 + "]" * 100_000 + "\n")
    elif case == "fifo":
        os.mkfifo(p)
    elif case == "dev-zero":
        p = Path("/dev/zero")
    else:
        with open(p, "wb") as f:
            f.truncate(5 << 20)
    t0 = time.monotonic()
    with pytest.raises(CalibrationError, match=match):
        cal.load_calibration(p)
    assert time.monotonic() - t0 < 10  # before: MemoryError (bomb, /dev/zero), RecursionError, a hang (FIFO)


@pytest.mark.skipif(not CPU_TINY_RUN.exists(), reason="the cpu-tiny recording is not in predictions/recorded/")
def test_cli_calibrate_fits_a_results_file_given_three_times_once(tmp_path, capsys, monkeypatch):
    """Issue 23, case 9.52: rec.json, a copy and rec.json again were fitted as 18 points, every 1σ shrinking by
    ~1/√3; each measurement is now fitted once, with a note, and the fit is the single file's."""
    import shutil

    from pytest_roofline import cli

    monkeypatch.chdir(REPO)
    copy = tmp_path / "copy.json"
    shutil.copy(CPU_TINY_RUN, copy)
    args = ["calibrate", "--points", "C=1,C=16", "--fit", "step_overhead_s"]
    assert cli.main([*args[:1], str(CPU_TINY_RUN), *args[1:], "-o", str(tmp_path / "one.yaml")]) == 0
    capsys.readouterr()
    rc = cli.main([*args[:1], str(CPU_TINY_RUN), str(copy), str(CPU_TINY_RUN), *args[1:], "-o",
                   str(tmp_path / "three.yaml")])
    out = capsys.readouterr().out
    assert rc == 0 and out.count("point(s) left out, the same measurement as in") == 2
    one, three = cal.load_calibration(tmp_path / "one.yaml"), cal.load_calibration(tmp_path / "three.yaml")
    assert three.uncertainty == one.uncertainty and three.constants == one.constants
    assert [p["label"] for p in three.points] == ["C=1", "C=16"]


def test_points_with_failed_requests_are_not_calibration_points():
    from pytest_roofline.measure.results.calibration_points import measured_points

    ok = {"id": "closed-c1", "concurrency": 1, "client": {"completed": 10, "failed": 0,
                                                          "output_throughput_tok_s": 50.0}}
    bad = {"id": "closed-c2", "concurrency": 2, "client": {"completed": 9, "failed": 1,
                                                           "output_throughput_tok_s": 90.0}}
    assert [p.id for p in measured_points({"points": [ok, bad]})] == ["closed-c1"]  # case 9.51: c2 was fitted


def test_the_heading_says_when_the_1_sigma_rests_on_the_assumed_noise(capsys, monkeypatch):
    """Trial s26b #13: one point, one TPOT value, one constant: the residual variance is undefined and the 1σ is the
    5% noise floor's, which the heading, "1σ from the Gauss–Newton covariance", did not say."""
    import dataclasses

    from pytest_roofline import cli

    monkeypatch.chdir(REPO)
    run = REPO / "predictions" / "recorded" / "day3-2026-07-31.results.json"  # the notebook's A100 sweep
    assert cli.main(["calibrate", str(run), "--points", "C=1"]) == 0
    out = capsys.readouterr().out
    assert ("fitted constants (1σ from the Gauss–Newton covariance at the optimum, scaled by the assumed 5% "
            "measurement noise, its floor: the fit's residuals are smaller, or too few to measure it):") in out
    res = cal.FitResult(constants=None, fitted=(), values={}, uncertainty={}, log_sd={},  # type: ignore[arg-type]
                        points=(), rms_log_residual=0.0, iterations=0)
    assert dataclasses.replace(res, noise_floor=False).describe().startswith(
        "fitted constants (1σ from the Gauss–Newton covariance at the optimum, scaled by the fit's residuals):")


def test_advice_at_one_context_length_asks_for_another_length_not_another_load(tmp_path, capsys, monkeypatch):
    """Trial s26b #12: throughput alone, at the notebook's one prompt and output length: the advice asked for C=2, then
    C=4, and all eight points still left step_overhead_s at ±105%; at one context length every step lies on one
    line in the batch, which the loads already fix, so the advice is another context length. And a concurrency-1
    TTFT is asked for with a short prompt, where the API server's few ms are not lost under the prefill."""
    import json

    from pytest_roofline import cli

    monkeypatch.chdir(REPO)
    d = json.loads((REPO / "predictions" / "recorded" / "day3-2026-07-31.results.json").read_text())
    for p in d["points"]:
        c = p.get("client") or {}
        c["tpot_ms"] = c["ttft_ms"] = c["itl_ms"] = None
    run = tmp_path / "tput-only.results.json"
    run.write_text(json.dumps(d))
    rc = cli.main(["calibrate", str(run), "--points", "C=1,C=2,C=4,C=8,C=16,C=32,C=64,C=128",
                   "--predictions", str(REPO / "predictions" / "day3.yaml")])
    out = capsys.readouterr()
    text = out.out + out.err
    assert rc == 0, text
    assert "more loads of these lengths narrow it little" in text and "another context length" in text
    assert "fit with C=" not in text
    assert "a measured TTFT at concurrency 1 would identify frontend_in_s, of a short prompt" in text
