"""The model's bands (model/bands.py): percentiles of measured / model ratios by regime, the pooled fallback, and
the band every simulated value carries."""

from __future__ import annotations

import math

import pytest

from pytest_roofline.model import bands
from pytest_roofline.model import serving as sv
from pytest_roofline.model.setup import build_setup

TPOT = "tpot_p50_ms"


def reg(load="low", tp="tp1", engine="v1", metric=TPOT):
    return bands.Regime(metric, load, tp, engine)


def test_a_regime_with_enough_ratios_spans_their_10th_to_90th_percentile():
    samples = [(reg(), float(x), "s1") for x in range(1, 11)]
    b = bands.derive_bands(samples)[reg().key]
    # linear interpolation over 1..10: position 0.1 x 9 = 0.9 -> 1.9, position 0.9 x 9 = 8.1 -> 9.1
    assert (b.lo, b.hi, b.n) == (pytest.approx(1.9), pytest.approx(9.1), 10)
    assert b.around(2.0) == (pytest.approx(3.8), pytest.approx(18.2))
    assert b.contains(2.0, 10.0) and not b.contains(2.0, 19.0)


def test_a_sparse_regime_is_its_min_max_widened_by_the_pooled_spread():
    samples = [(reg(), float(x), "s1") for x in range(1, 11)] + [(reg(load="high"), 2.0, "s2"),
                                                                  (reg(load="high"), 3.0, "s2")]
    out = bands.derive_bands(samples, between_sources=False)  # the within-regime rule alone (widening: below)
    pooled = out[reg().pooled_key]
    spread = math.log(pooled.hi / pooled.lo)
    high = out[reg(load="high").key]
    assert high.n == 2 and not high.pooled
    assert high.lo == pytest.approx(2.0 * math.exp(-spread / 2))
    assert high.hi == pytest.approx(3.0 * math.exp(spread / 2))


def test_a_regime_without_data_borrows_its_device_class_pool_and_cpu_never_lends_to_gpus():
    samples = [(reg(engine="cpu"), 5.0, "cpu-run")] * 6 + [(reg(engine="v1"), 1.1, "gpu-run")] * 6
    out = bands.derive_bands(samples)
    tp4 = bands.band_for(reg(tp="tpN"), out)
    assert tp4 is not None and tp4.pooled and tp4.hi == pytest.approx(1.1)
    assert bands.band_for(reg(metric="no_such_metric"), out) is None


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
        assert b is not None
        assert p.bands[metric] == pytest.approx(b.around(getattr(p, metric)))
    assert p.to_dict()["bands"][TPOT] == list(p.bands[TPOT])


def test_the_spread_between_sources_is_the_sd_of_their_median_log_ratios_each_source_counted_once():
    # source a: median 1.0 (log 0); source b: median e**0.2 however many points it has; sd of (0, 0.2) = 0.2 / sqrt 2
    ratios = [(0.5, "a"), (1.0, "a"), (4.0, "a")] + [(math.exp(0.2), "b")] * 7
    assert bands.between_source_log_sd(ratios) == pytest.approx(0.2 / math.sqrt(2))
    assert bands.between_source_log_sd([(1.3, "a"), (0.7, "a")]) == 0.0


def test_bands_widen_by_the_between_source_spread_in_quadrature_around_their_log_centre():
    # regime ratios 1..10 from source s1 (band 1.9..9.1 as above) and one ratio e**0.5 from source s2 in another
    # load class: median log-ratios (log 5 + log 6) / 2 (ten logs: the mean of the middle two) and 0.5
    samples = [(reg(), float(x), "s1") for x in range(1, 11)] + [(reg(load="high"), math.exp(0.5), "s2")]
    sd = abs((math.log(5) + math.log(6)) / 2 - 0.5) / math.sqrt(2)  # sample sd of two values = |difference| / sqrt 2
    z = 1.2815515655446004  # the normal 90th percentile: an 80% two-sided band
    centre, half = (math.log(1.9) + math.log(9.1)) / 2, (math.log(9.1) - math.log(1.9)) / 2
    half_total = math.sqrt(half ** 2 + (z * sd) ** 2)
    b = bands.derive_bands(samples)[reg().key]
    assert b.lo == pytest.approx(math.exp(centre - half_total))
    assert b.hi == pytest.approx(math.exp(centre + half_total))
    assert b.between_log_sd == pytest.approx(sd)
    assert bands.derive_bands(samples, between_sources=False)[reg().key].lo == pytest.approx(1.9)


def test_a_metric_one_source_measured_borrows_its_decode_sibling_spread_else_the_largest_and_cpu_never_lends():
    tput, ttft = "output_throughput_tok_per_s", "ttft_p50_ms"
    samples = ([(reg(metric=tput), 1.0, "g1")] * 5 + [(reg(metric=tput), math.exp(0.4), "g2")] * 5
               + [(reg(metric=ttft), 1.0, "g1")] * 5 + [(reg(metric=ttft), math.exp(1.0), "g2")] * 5
               + [(reg(), 1.0, "g1")] * 5  # TPOT: one GPU source only
               + [(reg(metric="itl_p99_ms"), 1.0, "g1")] * 5  # no decode sibling: the largest spread
               + [(reg(metric=tput, engine="cpu"), 1.0, "c1")] * 5 + [(reg(metric=tput, engine="cpu"), 9.0, "c2")] * 5)
    out = bands.derive_bands(samples)
    # TPOT borrows throughput's spread (the decode step sets both), not TTFT's larger one
    assert out[reg().key].between_log_sd == pytest.approx(0.4 / math.sqrt(2))
    assert out[reg(metric="itl_p99_ms").key].between_log_sd == pytest.approx(1.0 / math.sqrt(2))
    assert out[reg(metric=tput, engine="cpu").key].between_log_sd == pytest.approx(math.log(9.0) / math.sqrt(2))
    # the CPU's wider spread is lent to no GPU metric
    assert max(b.between_log_sd for k, b in out.items() if not k.endswith("cpu")) == pytest.approx(1 / math.sqrt(2))


def _three_sources(a_log: float = 0.0) -> list:
    # one GPU regime; sources A, B, C with five equal ratios each, log-ratios a_log, 0.1, 0.2
    reg = bands.regime_of("output_throughput_tok_per_s", mean_running_batch=4, tp=1, chunked_prefill=True,
                          device="cuda")
    return [(reg, math.exp(x), s) for x, s in ((a_log, "A"), (0.1, "B"), (0.2, "C")) for _ in range(5)]


def test_the_between_scale_is_the_smallest_that_reaches_nominal_leave_one_source_out():
    # Holding A out: B and C give the 10th-90th percentile band [0.1, 0.2] in log (centre 0.15, half 0.05) and a
    # between-source sd of stdev(0.1, 0.2) = 0.070711; A (log 0) is inside when sqrt(0.05^2 + (1.28155 k 0.070711)^2)
    # >= 0.15, i.e. k >= 0.141421 / (1.28155 x 0.070711) = 1.5607; C held out is the mirror image; B is inside at
    # any k (band [0, 0.2]).  Coverage is 5/15 below k = 1.5607 and 15/15 from it: the grid's first is 1.6.
    samples = _three_sources()
    below = [ok for _, _, ok in bands.loso_inside(samples, between_scale=1.5)]
    assert sum(below) == 5 and len(below) == 15
    assert bands.choose_between_scale(samples) == {"output_throughput_tok_per_s|*|gpu": 1.6}


def test_nested_coverage_chooses_each_sources_scale_without_that_source():
    # With A held out only B and C choose: each alone is one source, with no between-source spread to widen by,
    # so neither covers the other at any scale and the choice is the cap (3.0); A is then judged with 3.0:
    # half = sqrt(0.05^2 + (1.28155 x 3 x 0.070711)^2) = 0.276 >= 0.15, inside.
    inside, chosen = bands.nested_loso_inside(_three_sources())
    assert chosen["A"] == {"output_throughput_tok_per_s|*|gpu": bands.BETWEEN_SCALES[-1]} == {
        "output_throughput_tok_per_s|*|gpu": 3.0}
    assert all(ok for _, _, ok in inside) and len(inside) == 15
    # A's own ratios never move A's scale: a wild A (log 2) gets the same scale, and is then outside
    inside_wild, chosen_wild = bands.nested_loso_inside(_three_sources(a_log=2.0))
    assert chosen_wild["A"] == chosen["A"]
    assert not any(ok for s, _, ok in inside_wild if s == "A")
