"""The model's bands (model/bands.py): a split-conformal interval in log space around each regime's centre, the
half-width from the errors each source showed to centres derived without it, the pooled fallback, and the band every
simulated value carries.  Every expected value below is worked out by hand in its comment."""

from __future__ import annotations

import math

import pytest

from pytest_roofline.model import bands
from pytest_roofline.model import serving as sv
from pytest_roofline.model.setup import build_setup

TPOT = "tpot_p50_ms"


def reg(load="low", tp="tp1", engine="v1", metric=TPOT):
    return bands.Regime(metric, load, tp, engine)


def _five_sources(a_log: float = 0.0) -> list:
    # one GPU regime, sources A..E with one ratio each, log-ratios a_log, 0.1, 0.2, 0.3, 0.4
    return [(reg(), math.exp(x), s) for x, s in ((a_log, "A"), (0.1, "B"), (0.2, "C"), (0.3, "D"), (0.4, "E"))]


def test_the_conformal_half_width_is_the_ceil_n_plus_1_times_nominal_order_statistic():
    # n = 5: rank ceil(6 x 0.8) = ceil(4.8) = 5, the largest; n = 9: ceil(8.0) = 8; n = 10: ceil(8.8) = 9
    assert bands.conformal_half_width([0.5, 0.1, 0.4, 0.2, 0.3]) == 0.5
    assert bands.conformal_half_width([float(x) for x in range(1, 10)]) == 8.0
    assert bands.conformal_half_width([float(x) for x in range(10, 0, -1)]) == 9.0
    # n = 4: ceil(5 x 0.8) = 4, the largest; n = 3: ceil(3.2) = 4 > 3, nothing bounds it
    assert bands.conformal_half_width([0.3, 0.1, 0.2, 0.4]) == 0.4
    assert bands.conformal_half_width([0.3, 0.1, 0.2]) == math.inf
    # at 50%: n = 5, ceil(3.0) = 3, the median
    assert bands.conformal_half_width([0.5, 0.1, 0.4, 0.2, 0.3], nominal=0.5) == 0.3


def test_the_per_source_half_width_weighs_every_source_once_and_a_new_source_at_infinity():
    # K = 4 sources, each 1/5 of the weight; A's two scores 1/10 each.  Sorted: 0.1 (A, cum 0.1), 0.2 (B, 0.3),
    # 0.3 (A, 0.4), 0.4 (C, 0.6), 0.5 (D, 0.8): the cumulative weight reaches 0.8 at 0.5
    scores = [("A", 0.1), ("A", 0.3), ("B", 0.2), ("C", 0.4), ("D", 0.5)]
    assert bands.hierarchical_half_width(scores) == 0.5
    # K = 3: the sources hold 3/4 < 0.8 of the weight; the rest is the new source's, at infinity
    assert bands.hierarchical_half_width(scores[:4]) == math.inf
    # nine sources of one score each (1..9), weights 1/10: 0.8 is reached at the 8th, as the pointwise rule's
    nine = [(f"s{i}", float(i)) for i in range(1, 10)]
    assert bands.hierarchical_half_width(nine) == bands.conformal_half_width([s for _, s in nine]) == 8.0


def test_a_regimes_centre_is_the_median_of_its_sources_medians_else_its_device_class():
    samples = ([(reg(), math.exp(x), "a") for x in (0.1, 0.3, 0.5)]  # a's median log 0.3, three points
               + [(reg(), math.exp(0.6), "b")]  # b: 0.6; the regime's centre: median(0.3, 0.6) = 0.45
               + [(reg(load="high"), math.exp(-0.3), "c")])  # c only at high load
    assert bands.regime_centre(samples, reg()) == pytest.approx(0.45)
    # one source at high load is its own bias, not the regime's (MIN_CENTRE_SOURCES 2): the class's centre, the
    # sources' medians over all the class's points, a 0.3, b 0.6, c -0.3: 0.3
    assert bands.MIN_CENTRE_SOURCES == 2
    assert bands.regime_centre(samples, reg(load="high")) == pytest.approx(0.3)
    # a second source there gives the regime its own centre: median(c -0.3, d -0.1) = -0.2
    assert bands.regime_centre(samples + [(reg(load="high"), math.exp(-0.1), "d")],
                               reg(load="high")) == pytest.approx(-0.2)
    # no data at TP > 1: the class's sources' medians over all its points, a 0.3, b 0.6, c -0.3: median 0.3
    assert bands.regime_centre(samples, reg(tp="tpN")) == pytest.approx(0.3)
    # no class lends to the other: the CPU engine has no data here
    assert bands.regime_centre(samples, reg(engine="cpu")) is None


def test_each_score_is_the_distance_from_a_centre_the_source_did_not_set():
    # three sources, one regime, log-ratios A 0 (x2), B 0.1, C 0.2.  A's centre from B, C: median(0.1, 0.2) = 0.15;
    # B's from A (median 0) and C: 0.1; C's from A and B: 0.05
    samples = [(reg(), 1.0, "A"), (reg(), 1.0, "A"), (reg(), math.exp(0.1), "B"), (reg(), math.exp(0.2), "C")]
    got = bands.out_of_source_scores(samples, reg().pooled_key)
    assert [s for s, _ in got] == ["A", "A", "B", "C"]
    assert [v for _, v in got] == pytest.approx([0.15, 0.15, 0.0, 0.15])
    # a source alone in its class has no other source to be judged by
    assert bands.out_of_source_scores([(reg(), 2.0, "A")], reg().pooled_key) == []


def test_a_band_is_its_centre_times_and_divided_by_exp_of_the_conformal_half_width():
    # A..E at log 0, 0.1, 0.2, 0.3, 0.4.  Scores: A's centre from B..E = median(0.1..0.4) = 0.25, score 0.25;
    # B: median(0, 0.2, 0.3, 0.4) = 0.25, 0.15; C: median(0, 0.1, 0.3, 0.4) = 0.2, 0; D: 0.15, 0.15; E: 0.15, 0.25.
    # n = 5: the 5th smallest, 0.25.  Centre: median(0..0.4) = 0.2.  Band exp(0.2 -/+ 0.25)
    out = bands.derive_bands(_five_sources())
    b = out[reg().key]
    assert (b.lo, b.hi) == (pytest.approx(math.exp(-0.05)), pytest.approx(math.exp(0.45)))
    assert (b.n, b.sources, b.pooled, b.half_width_log) == (5, ("A", "B", "C", "D", "E"), False, pytest.approx(0.25))
    assert b.around(2.0) == (pytest.approx(2 * math.exp(-0.05)), pytest.approx(2 * math.exp(0.45)))
    assert b.contains(1.0, math.exp(0.44)) and not b.contains(1.0, math.exp(0.46))
    # a regime without data takes the class's band: the same centre here (one regime), marked pooled
    high = bands.band_for(reg(load="high"), out)
    assert high is not None and high.pooled and high.lo == pytest.approx(math.exp(-0.05))
    # and the CPU engine, without data, gets none
    assert bands.band_for(reg(engine="cpu"), out) is None


def test_a_regime_one_source_measured_gets_the_class_centre_marked_pooled():
    # A..E at low load as above (class centre 0.2), F alone at high load at log 1.0: F's regime has one source, so
    # its band is centred on the class (median of the six sources' medians 0, 0.1, 0.2, 0.3, 0.4, 1.0: 0.25), not
    # on F's 1.0
    six = _five_sources() + [(reg(load="high"), math.exp(1.0), "F")]
    out = bands.derive_bands(six)
    high = out[reg(load="high").key]
    assert high.pooled and high.sources == ("F",) and high.n == 1
    assert math.log(high.lo) + high.half_width_log == pytest.approx(0.25)
    assert not out[reg().key].pooled  # five sources at low load: its own centre, 0.2
    assert math.log(out[reg().key].lo) + out[reg().key].half_width_log == pytest.approx(0.2)


def test_a_class_with_too_few_scores_for_the_nominal_rank_has_no_band():
    # three sources give three scores: rank ceil(4 x 0.8) = 4 > 3
    three = _five_sources()[:3]
    assert bands.derive_bands(three) == {}
    assert bands.band_for(reg(), bands.derive_bands(three)) is None


def test_leave_one_source_out_judges_each_source_by_centres_and_a_width_set_without_it():
    # Holding A out: B..E (0.1..0.4) give scores B 0.2 (centre from C, D, E: 0.3), C 0.1, D 0.1, E 0.2; n = 4: the
    # largest, 0.2; centre 0.25: band [0.05, 0.45] in log, A (0) outside.  B out: A, C, D, E give scores 0.3, 0.1,
    # 0.1, 0.2, width 0.3 around median(0, 0.2, 0.3, 0.4) = 0.25: [-0.05, 0.55], B (0.1) inside.  C out: scores 0.3,
    # 0.2, 0.2, 0.3, width 0.3 around 0.2: C inside.  D and E mirror B and A.
    inside = bands.loso_inside(_five_sources())
    assert [(s, ok) for s, _, ok in inside] == [("A", False), ("B", True), ("C", True), ("D", True), ("E", False)]
    # A's own ratio never moves the band A is judged by: at log 0.25 (inside [0.05, 0.45]) A is inside, and the
    # bands derived without A are the same whatever A measured
    assert bands.loso_inside(_five_sources(a_log=0.25))[0][2] is True
    without_a = [x for x in _five_sources() if x[2] != "A"]
    assert bands.derive_bands(without_a) == bands.derive_bands([x for x in _five_sources(a_log=9.0) if x[2] != "A"])


def test_the_roofline_fraction_band_spans_the_10th_to_90th_percentile():
    # linear interpolation over 1..10: position 0.1 x 9 = 0.9 -> 1.9, position 0.9 x 9 = 8.1 -> 9.1; below 5 ratios
    # their min-max
    b = bands.percentile_band([float(x) for x in range(1, 11)], ["s"] * 10)
    assert (b.lo, b.hi, b.n, b.sources) == (pytest.approx(1.9), pytest.approx(9.1), 10, ("s",))
    assert (bands.percentile_band([0.6, 0.7], ["a", "b"]).lo, bands.percentile_band([0.6, 0.7], ["a", "b"]).hi) == (
        0.6, 0.7)


def test_every_simulated_value_carries_the_committed_band_of_its_regime():
    s = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b", engine={"name": "vllm", "version": "0.26.0"})
    w = sv.Workload(input_len=sv.LengthDist(256), output_len=sv.LengthDist(64), num_requests=4, concurrency=1)
    p = sv.simulate(s, w)
    committed = bands.load_bands()
    assert committed, "model/data/bands.json is written by benchmarks/model_accuracy.py --corpus --write-bands"
    for metric in bands.BAND_METRICS:
        r = bands.regime_of(metric, mean_running_batch=p.mean_running_batch, tp=1, chunked_prefill=True,
                            device="cuda")
        b = bands.band_for(r, committed)
        assert b is not None and b.half_width_log > 0
        # a committed band is its centre x/÷ exp(half-width): hi / lo = exp(2 x half-width)
        assert b.hi / b.lo == pytest.approx(math.exp(2 * b.half_width_log), rel=1e-3)
        assert p.bands[metric] == pytest.approx(b.around(getattr(p, metric)))
    assert p.to_dict()["bands"][TPOT] == list(p.bands[TPOT])


def test_prefill_bound_work_is_its_own_device_class_on_gpus_and_not_on_the_cpu_engine():
    # half the model's step time on prefill compute is prefill-bound; just under it is not
    heavy = bands.regime_of(TPOT, mean_running_batch=8, tp=1, chunked_prefill=True, device="cuda", prefill_share=0.5)
    light = bands.regime_of(TPOT, mean_running_batch=8, tp=1, chunked_prefill=True, device="cuda", prefill_share=0.49)
    cpu = bands.regime_of(TPOT, mean_running_batch=8, tp=1, chunked_prefill=True, device="cpu", prefill_share=0.95)
    assert (heavy.mix, heavy.pooled_key) == ("prefill", f"{TPOT}|*|gpu-prefill")
    assert heavy.key == f"{TPOT}|low|tp1|v1|prefill"
    assert (light.mix, light.pooled_key, light.key) == ("decode", f"{TPOT}|*|gpu", f"{TPOT}|low|tp1|v1")
    assert (cpu.mix, cpu.pooled_key) == ("decode", f"{TPOT}|*|cpu")


def test_a_class_with_one_source_gets_no_band_but_the_range_its_runs_showed():
    prefill = bands.regime_of(TPOT, mean_running_batch=8, tp=1, chunked_prefill=True, device="cuda",
                              prefill_share=0.9)
    samples = _five_sources() + [(prefill, 0.5, "P"), (prefill, 0.25, "P"), (prefill, 0.9, "P")]
    derived = bands.derive_bands(samples)
    # the decode class: five sources, a band; the prefill class: one source, no score (no other source's centre)
    assert f"{TPOT}|*|gpu" in derived and prefill.pooled_key not in derived
    assert bands.band_for(prefill, derived) is None
    ranges = bands.observed_ranges(samples)
    assert set(ranges) == {prefill.pooled_key}
    r = ranges[prefill.pooled_key]
    assert (r.lo, r.hi, r.n, r.sources) == (pytest.approx(0.25), pytest.approx(0.9), 3, ("P",))
    note = bands.band_note(prefill, ranges)
    assert note is not None and "prefill-bound work on GPUs" in note and "3 measured value(s) from 1" in note
    assert "(P)" in note and "0.25-0.90" in note
    # a decode value of the same data has its band, and no note
    assert bands.band_note(reg(), ranges) is None


def test_a_prefill_bound_gpu_value_carries_the_committed_range_instead_of_a_band(prefill_one_source):
    # the committed corpus has one public source of prefill-bound GPU runs (gpustack-qwen3-bursts): no band, its range
    committed = bands.load_observed_ranges()
    assert {f"{m}|*|gpu-prefill" for m in bands.BAND_METRICS} <= set(committed)
    s = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b", engine={"name": "vllm", "version": "0.26.0"})
    # 8,000-token prompts, 16 tokens out, 8 at a time: the model spends ~90% of its step time on prefill compute
    w = sv.Workload(input_len=sv.LengthDist(8000), output_len=sv.LengthDist(16), num_requests=16, concurrency=8)
    p = sv.simulate(s, w)
    assert p.time_shares["prefill_compute"] >= bands.PREFILL_BOUND_SHARE
    assert not p.bands
    for metric in bands.BAND_METRICS:
        r = committed[f"{metric}|*|gpu-prefill"]
        assert p.band_notes[metric].startswith("no band: prefill-bound work on GPUs")
        assert f"{r.lo:.2f}-{r.hi:.2f}" in p.band_notes[metric]
    assert p.to_dict()["band_notes"] == dict(p.band_notes)
    # a chat-shaped point on the same setup (512 in, 64 out) is decode-bound and keeps its bands
    chat = sv.simulate(s, sv.Workload(input_len=sv.LengthDist(512), output_len=sv.LengthDist(64), num_requests=8,
                                      concurrency=4))
    assert chat.time_shares["prefill_compute"] < bands.PREFILL_BOUND_SHARE
    assert set(chat.bands) == set(bands.BAND_METRICS) and not chat.band_notes


def test_a_prefill_bound_gpu_value_has_the_band_two_public_sources_give():
    # since 2026-12-07 the corpus holds prefill-bound GPU runs of two public sources (BLIS's GuideLLM sweeps of
    # CodeLlama-34B, GPUStack's bursts): their out-of-source scores give the class a band, wide as they disagree
    committed = bands.load_bands()
    b = committed["output_throughput_tok_per_s|*|gpu-prefill"]
    assert set(b.sources) == {"blis-h100-codellama34b", "gpustack-qwen3-bursts"}
    assert b.hi / b.lo > 3  # x/÷ 1.96 around its centre: the width two disagreeing sources leave
    s = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b", engine={"name": "vllm", "version": "0.26.0"})
    w = sv.Workload(input_len=sv.LengthDist(8000), output_len=sv.LengthDist(16), num_requests=16, concurrency=8)
    p = sv.simulate(s, w)
    assert p.time_shares["prefill_compute"] >= bands.PREFILL_BOUND_SHARE
    lo, hi = p.bands["output_throughput_tok_per_s"]
    reg = bands.regime_of("output_throughput_tok_per_s", mean_running_batch=p.mean_running_batch, tp=1,
                          chunked_prefill=True, device="cuda", prefill_share=p.time_shares["prefill_compute"])
    band = bands.band_for(reg)
    assert band is not None and (lo, hi) == pytest.approx(band.around(p.output_throughput_tok_per_s))
    assert not p.band_notes
