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
    out = bands.derive_bands(samples)
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
