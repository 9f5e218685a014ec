"""The three throughputs' intervals count what vLLM's throughputs count (tokens of completed requests over the
duration): one interval from the completion events, so output, total and request throughput are exact multiples of
each other where every request has the same lengths (trial s16 H1: 3 requests gave output throughput ±10% from the
token cadence, total ±76%, request none, so one point was FAIL and INCONCLUSIVE at once). A closed loop's
completions are cut into batches of whole rounds of C (lockstep bursts stay inside a batch) and the ratio of their
tokens to their spans gets a delta-method Student-t interval; a point with fewer than 3 rounds, and an open loop,
get the count interval 1 ± z/√N; nothing reaches below 0.

Every expected value below is worked by hand from the definitions in the test's comments."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_roofline.measure.loadgen import RequestRecord
from pytest_roofline.measure.stats import steady_summary, summarize_records
from pytest_roofline.measure.stats.intervals import completion_rate_interval

IN, OUT = 128, 64
Z95 = 1.959964  # standard normal 0.975 quantile
T2 = 4.302653  # Student t(0.975, 2 dof)
T3 = 3.182446  # Student t(0.975, 3 dof)
T7 = 2.364624  # Student t(0.975, 7 dof)


def _rec(i: int, sent: float, end: float) -> RequestRecord:
    chunks = list(sent + 0.01 + (end - sent - 0.01) * np.arange(OUT) / (OUT - 1))
    return RequestRecord(index=i, request_id=str(i), warmup=False, input_len=IN, output_len=OUT, sent_s=sent,
                         first_token_s=chunks[0], chunk_times_s=chunks, end_s=chunks[-1], prompt_tokens=IN,
                         completion_tokens=OUT, status="ok")


def _lockstep(cycles_s: list[float], c: int, t0: float = 10.0) -> list[RequestRecord]:
    """A closed loop at concurrency ``c`` whose ``c`` requests are sent together and complete together: burst j
    is sent at the previous burst's end and ends ``cycles_s[j]`` later."""
    recs, sent = [], t0
    for j, cyc in enumerate(cycles_s):
        recs += [_rec(j * c + i, sent, sent + cyc) for i in range(c)]
        sent += cyc
    return recs


def _iv(recs: list[RequestRecord], c: int | None, t0: float = 10.0) -> dict:
    return steady_summary(recs, t0, concurrency=c, method="off")["intervals"]


def _multiples(iv: dict) -> None:
    req, out, tot = (iv[k] for k in ("request_throughput_req_s", "output_throughput_tok_s", "total_throughput_tok_s"))
    for other, scale in ((out, OUT), (tot, IN + OUT)):
        for side in ("estimate", "lo", "hi"):
            assert other[side] == pytest.approx(scale * req[side], rel=1e-12), side
        assert other["method"] == req["method"] and other["n"] == req["n"]


def test_equal_lengths_give_three_intervals_that_are_exact_multiples():
    # 120 requests at C = 4: 30 rounds, 15 batches of 2 rounds (8 completions) whose spans alternate 0.2 s and 2 s
    # (the batches' branch), then 8 requests (2 rounds: the count interval) and an open loop (the count interval)
    closed = _lockstep([0.1, 0.1, 1.0, 1.0] * 7 + [0.1, 0.1], 4)
    iv = _iv(closed, 4)
    assert iv["request_throughput_req_s"]["method"] == "batch-means"
    assert iv["request_throughput_req_s"]["note"].startswith("15 batches of 8")
    _multiples(iv)
    _multiples(_iv(closed[:8], 4))  # the count interval
    _multiples(_iv(closed, None))  # an open loop: the count interval
    # the estimate stays vLLM's figure: completed requests' output tokens over first send -> last end
    duration = max(r.end_s for r in closed if r.end_s is not None) - 10.0
    assert iv["output_throughput_tok_s"]["estimate"] == pytest.approx(120 * OUT / duration, rel=1e-12)
    assert summarize_records(closed, 10.0)["output_throughput_tok_s"] == pytest.approx(120 * OUT / duration,
                                                                                       rel=1e-9)


def test_batches_of_whole_bursts_by_the_delta_method():
    # C = 4: batches of one round (4 completions), 32 completions -> 8 batches. Bursts end at 0.5, 1, 1.5, 2, 3, 4,
    # 5, 6 s after the window start, so the batches span d = [0.5] * 4 + [1] * 4 s with w = 4 requests each:
    # R = 32/6 req/s, e = w - R d = [4/3] * 4 + [-4/3] * 4, s_e = (4/3) sqrt(8/7), mean d = 0.75 s,
    # half-width = t(7) s_e / (0.75 sqrt(8)) = 1.589 req/s
    recs = _lockstep([0.5] * 4 + [1.0] * 4, 4, t0=0.0)
    iv = completion_rate_interval([r.end_s for r in recs], (0.0, 6.0), concurrency=4)
    half = T7 * (4 / 3) * math.sqrt(8 / 7) / (0.75 * math.sqrt(8))
    assert iv.estimate == pytest.approx(32 / 6, rel=1e-12)
    assert (iv.lo, iv.hi) == (pytest.approx(32 / 6 - half, rel=1e-5), pytest.approx(32 / 6 + half, rel=1e-5))
    assert iv.method == "batch-means" and iv.n == 32


def test_a_closed_loop_gets_its_batches_interval_not_the_poisson_count():
    # a closed loop's completions are paced by its cycles, not Poisson: bursts ending at 1, 2, 3, 4, 5, 6.5, 7.5,
    # 9 s give batches d = [1] * 5 + [1.5, 1, 1.5] s, R = 32/9 req/s, e = 4 - R d: six of 4/9, two of -12/9
    # (mean 0), s_e^2 = (6 * 16 + 2 * 144) / 81 / 7, mean d = 9/8 s: half-width t(7) s_e / (1.125 sqrt(8)) =
    # 0.612 req/s, narrower than the count interval's 32/9 * z/sqrt(32) = 1.23 req/s, and it is the interval
    recs = _lockstep([1, 1, 1, 1, 1, 1.5, 1, 1.5], 4, t0=0.0)
    iv = completion_rate_interval([r.end_s for r in recs], (0.0, 9.0), concurrency=4)
    half = T7 * math.sqrt((6 * 16 + 2 * 144) / 81 / 7) / (1.125 * math.sqrt(8))
    assert half < 32 / 9 * Z95 / math.sqrt(32)
    assert (iv.lo, iv.hi) == (pytest.approx(32 / 9 - half, rel=1e-5), pytest.approx(32 / 9 + half, rel=1e-5))
    assert iv.method == "batch-means"


def test_three_lockstep_bursts_of_four_give_a_finite_interval_at_or_above_zero():
    # 12 completions at C = 4 are 3 rounds: cycles 0.9, 1.0, 1.1 s end at 0.9, 1.9, 3.0 s of a 3 s window:
    # R = 4 req/s, e = 4 - 4 d = [0.4, 0, -0.4], s_e = 0.4, half-width t(2) * 0.4 / (1 * sqrt(3)) = 0.994 req/s
    recs = _lockstep([0.9, 1.0, 1.1], 4)
    req = _iv(recs, 4)["request_throughput_req_s"]
    half = T2 * 0.4 / math.sqrt(3)
    assert req["method"] == "batch-means"
    assert req["estimate"] == pytest.approx(4.0, rel=1e-12)
    assert (req["lo"], req["hi"]) == (pytest.approx(4 - half, rel=1e-5), pytest.approx(4 + half, rel=1e-5))
    assert 0 <= req["lo"] <= req["estimate"] <= req["hi"] < math.inf


def test_the_small_point_that_failed_live_decides_a_floor_far_below_it():
    # test_two_cpu_engines_behind_a_round_robin_proxy under ad61acc: 16 requests at C = 4 in 0.8 s, 3 time
    # sub-windows, t(2) took the output-throughput interval to 0 and '>= 1 tok/s' read INCONCLUSIVE.
    # Now 4 rounds (cycles 0.18, 0.2, 0.22, 0.2 s): R = 20 req/s = 1280 tok/s, e = 4 - 20 d = [0.4, 0, -0.4, 0],
    # s_e = sqrt(0.32 / 3), half-width t(3) s_e / (0.2 * 2) = 2.598 req/s: +-13.0%
    out = _iv(_lockstep([0.18, 0.2, 0.22, 0.2], 4), 4)["output_throughput_tok_s"]
    rel = T3 * math.sqrt(0.32 / 3) / 0.4 / 20
    assert out["estimate"] == pytest.approx(1280.0, rel=1e-12)
    assert out["lo"] == pytest.approx(1280.0 * (1 - rel), rel=1e-5) and out["lo"] > 1.0


def test_a_three_request_point_is_a_student_t_on_three_cycles_and_two_get_the_count():
    # C = 1, 3 requests back to back of 0.28, 0.3, 0.32 s: 3 in 0.9 s = 10/3 req/s; e = 1 - (10/3) d =
    # [1/15, 0, -1/15], s_e = 1/15, half-width t(2) (1/15) / (0.3 sqrt(3)) = +-16.6% (t with 2 degrees of freedom:
    # wide because 3 cycles are few, not because of a token cadence)
    iv = _iv(_lockstep([0.28, 0.3, 0.32], 1), 1)
    half = T2 * (1 / 15) / (0.3 * math.sqrt(3))
    for key, scale in (("request_throughput_req_s", 1), ("output_throughput_tok_s", OUT)):
        assert iv[key]["estimate"] == pytest.approx(10 / 3 * scale, rel=1e-12)
        assert iv[key]["method"] == "batch-means"
        assert iv[key]["hi"] == pytest.approx((10 / 3 + half) * scale, rel=1e-5)
    # 2 requests are 2 rounds: the count interval +-z/sqrt(2) = +-139%, clipped at 0
    two = _iv(_lockstep([0.3, 0.3], 1), 1)["request_throughput_req_s"]
    assert two["method"] == "count" and two["lo"] == 0.0
    assert two["hi"] == pytest.approx(2 / 0.6 * (1 + Z95 / math.sqrt(2)), rel=1e-5)


def test_unequal_lengths_count_the_tokens_a_request_carries():
    # open loop, count interval with weights: R (1 +- z sqrt(sum w^2) / sum w); 3 requests of 10, 20, 30 tokens
    # ending at 1, 2, 4 s of a 4 s window: R = 15 tok/s, sqrt(100 + 400 + 900) / 60 = sqrt(1400) / 60
    iv = completion_rate_interval([1.0, 2.0, 4.0], (0.0, 4.0), weights=[10.0, 20.0, 30.0])
    rel = Z95 * math.sqrt(1400) / 60
    assert iv.estimate == pytest.approx(15.0) and iv.hi == pytest.approx(15.0 * (1 + rel), rel=1e-5)
    assert iv.lo == pytest.approx(max(0.0, 15.0 * (1 - rel)), abs=1e-9)


def test_no_interval_of_a_rate_or_a_latency_mean_reaches_below_zero():
    rng = np.random.default_rng(7)
    for n in (3, 6, 10, 12, 14, 16):
        recs = _lockstep(list(rng.uniform(0.05, 0.6, n)), 1)
        for c in (1, None):
            for key, v in _iv(recs, c).items():
                if v["lo"] is not None and (key.endswith(".mean") or key.endswith("_s")):
                    assert v["lo"] >= 0.0, (n, key, v)


def test_completions_that_carried_no_tokens_read_zero_with_no_upper_bound_not_nan():
    # review s17 L5: two completions of 0 tokens gave hi = NaN (0 x inf), written as null ("unbounded") by luck
    iv = completion_rate_interval([1.0, 2.0], (0.0, 2.0), weights=[0.0, 0.0])
    assert (iv.estimate, iv.lo, iv.hi) == (0.0, 0.0, math.inf)
