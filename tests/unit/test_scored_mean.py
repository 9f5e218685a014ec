"""A live run's mean is the mean over every completed request, the figure ``vllm bench serve`` prints as
``mean_*_ms``: its batch-means interval once dropped the last few requests from the estimate it scored (30 of 32 at
C = 2; peer trial 15: TTFT mean 8.851 ms scored for 8.661), so a verdict and the results file disagreed."""

from __future__ import annotations

import json
import statistics

import numpy as np
import pytest
from support.paths import RECORDED

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.measure.results import RecordedMeasurement
from pytest_roofline.measure.stats.intervals import batch_means, mean_interval, t_half_width
from pytest_roofline.scoring import score

RESULTS = RECORDED / "cpu-tiny-2026-12-05.results.json"
REQUESTS = RECORDED / "cpu-tiny-2026-12-05.closed-c2.requests.jsonl"


def test_the_batch_means_interval_is_centred_on_the_mean_of_every_sample() -> None:
    values = np.arange(1.0, 33.0)  # 32 samples: 6 batches of 5 leave 31 and 32 out of the batches
    iv = mean_interval(values)
    assert iv.estimate == 16.5  # (1 + 32) ÷ 2, every sample; the six batches' mean is 15.5
    assert float(batch_means(values).mean()) == 15.5
    half = t_half_width(batch_means(values), 0.95)
    assert iv.lo == pytest.approx(16.5 - half) and iv.hi == pytest.approx(16.5 + half) and iv.n == 32


def _recomputed_c2() -> dict[str, float]:
    """The C = 2 point's means from its per-request records, with vllm bench serve's definitions: TTFT and E2E
    over the measured (non-warm-up) requests; TPOT = (E2E − TTFT) ÷ (output tokens − 1), in ms."""
    recs = [json.loads(line) for line in REQUESTS.read_text(encoding="utf-8").splitlines()]
    recs = [r for r in recs if not r["warmup"]]
    ttft = [(r["first_token_s"] - r["sent_s"]) * 1e3 for r in recs]
    e2e = [(r["chunk_times_s"][-1] - r["sent_s"]) * 1e3 for r in recs]
    return {"ttft": statistics.fmean(ttft), "e2e": statistics.fmean(e2e), "n": len(recs)}


def test_a_live_mean_is_scored_on_every_completed_request() -> None:
    ref = _recomputed_c2()
    doc = json.loads(RESULTS.read_text(encoding="utf-8"))
    iv = next(p for p in doc["points"] if p["id"] == "closed-c2")["client"]["intervals"]["ttft_ms.mean"]
    assert ref["n"] == 32 and iv["note"] == "6 batches of 5"  # the file's interval: 30 of the 32 in its estimate
    assert iv["estimate"] != pytest.approx(ref["ttft"], rel=1e-6)
    spec = loads_spec(
        "hardware: cpu\nmodel: roofline-tiny\npredictions:\n"
        "  - {id: ttft-mean, quantity: ttft_mean, at: {concurrency: 2}, predicted: 6 ms, tolerance: ±50%}\n"
        "  - {id: e2e-mean, quantity: e2e_mean, at: {concurrency: 2}, predicted: 110 ms, tolerance: ±50%}\n")
    meas = RecordedMeasurement(doc)
    ttft, e2e = (score(spec, p, "measured", meas) for p in spec.predictions)
    assert ttft.measured_value == pytest.approx(ref["ttft"] / 1e3, rel=1e-6)  # 6.0130 ms, not the file's 6.0027
    assert e2e.measured_value == pytest.approx(ref["e2e"] / 1e3, rel=1e-6)
    # the interval keeps its half-width and is centred on the scored mean
    half = (iv["hi"] - iv["lo"]) / 2
    assert ttft.interval is not None
    assert ttft.interval["lo"] == pytest.approx(ref["ttft"] / 1e3 - half / 1e3, rel=1e-9)
    assert ttft.interval["hi"] == pytest.approx(ref["ttft"] / 1e3 + half / 1e3, rel=1e-9)


def test_a_latency_means_interval_stays_above_its_smallest_batch_mean() -> None:
    """Trial s25b #9: three slow batches among sixteen put a TTFT mean's Student-t interval below every request.
    80 samples: 13 batches of five at 10 ms, then 3 at 500 ms; mean (65·10 + 15·500) ÷ 80 = 101.875 ms; the batch
    means' sd is 197.5 ms, t(15) · 197.5 ÷ √16 = 105.2 ms, so the t-interval starts at −3.4 ms. With 16 batches all
    above the true mean with probability ≤ 2^-16, the lower side is the smallest batch mean, 10 ms."""
    from pytest_roofline.measure.stats.steady import latency_mean_interval

    values = [10.0] * 65 + [500.0] * 15
    iv = latency_mean_interval(values, 0.95)
    assert iv.estimate == pytest.approx(101.875)
    assert iv.lo == 10.0 and iv.hi == pytest.approx(101.875 + 105.2, abs=0.2)
    # four batches (20 samples): 2^-4 > 2.5 %, so only the clip at 0 applies
    few = latency_mean_interval([10.0] * 15 + [500.0] * 5, 0.95)
    assert few.lo == 0.0


def test_a_replayed_bursty_ttft_mean_far_below_every_request_fails() -> None:
    """The same on vllm bench serve's own --save-detailed file (80 requests at 8 req/s, a burst of slow TTFTs):
    5 ms ±10% against a 74.2 ms mean whose every request took 6.48 ms or more is a FAIL, not INCONCLUSIVE."""
    from support.paths import PEERS

    from pytest_roofline.measure.results.peers import load_any

    path = PEERS / "cpu-tiny-vllm-bench-detailed" / "open_r8.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    spec = loads_spec(
        "hardware: cpu\nmodel: roofline-tiny\nworkload: {input_len: 128, output_len: 64}\n"
        "sweep: {mode: open, rates: [8]}\npredictions:\n"
        "  - {id: t, quantity: ttft_mean, at: {rate: 8}, predicted: 5 ms, tolerance: ±10%}\n")
    v = score(spec, spec.predictions[0], "measured", RecordedMeasurement(load_any(path)))
    assert v.measured_value == pytest.approx(statistics.fmean(raw["ttfts"]), rel=1e-9)
    assert v.interval is not None and v.interval["lo"] >= min(raw["ttfts"]) > 0.0055
    assert v.status.value == "fail"
