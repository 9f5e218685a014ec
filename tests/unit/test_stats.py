"""Statistics on hand-built records; every expected value is worked out by hand in the comments."""

from __future__ import annotations

import json
import math

import pytest

from pytest_roofline.measure import stats
from pytest_roofline.measure.loadgen import LoadResult, LoadSpec, RequestRecord
from pytest_roofline.measure.stats import GLOSSARY, distribution, summarize, summarize_records

CLIENT_KEYS = {
    "completed", "failed", "output_throughput_tok_s", "total_throughput_tok_s", "request_throughput_req_s",
    "per_request_output_tok_s", "ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "schedule_lag_ms",
    "mean_in_flight", "littles_law", "token_count_mismatches", "steady_output_throughput_tok_s",
    "steady_mean_in_flight", "steady_window", "steady", "intervals",  # issue 13: steady window and intervals
    "intervals_window", "steady_intervals", "bursts",  # issue 20: whole-run intervals, bursts
    "held_mean_in_flight",  # a closed loop: in flight from the fill to the last send (stats.held)
}
DIST_KEYS = {"mean", "p50", "p90", "p95", "p99"}


def rec(index, sent, chunks, end, *, prompt=10, completion=None, input_len=10, output_len=None,
        ok=True, warmup=False, scheduled=None):
    completion = len(chunks) if completion is None else completion
    return RequestRecord(
        index=index, request_id=f"r{index}", warmup=warmup, input_len=input_len,
        output_len=output_len if output_len is not None else len(chunks),
        scheduled_s=scheduled, sent_s=sent, first_token_s=chunks[0] if chunks else None,
        chunk_times_s=list(chunks), end_s=end, prompt_tokens=prompt if ok else None,
        completion_tokens=completion if ok else None, status="ok" if ok else "error",
        error=None if ok else "HTTP 500: boom",
    )


def result(records, measure_start, mode="closed"):
    spec = LoadSpec(model="m", token_id_range=(10, 300), mode=mode, concurrency=4,
                    rate_req_s=1.0 if mode == "open" else None, num_requests=len(records))
    return LoadResult(spec=spec, records=records, run_start_s=measure_start - 1.0,
                      measure_start_s=measure_start, run_end_s=measure_start + 10.0,
                      wall_anchor=1.7e9, perf_anchor_s=measure_start - 1.0)


@pytest.fixture
def mixed():
    """Window starts at 100.0.

    r0  warm-up: ignored everywhere (it even overlaps the window, and has a huge TTFT).
    r1  sent 100.00, token chunks 100.10 / 100.15 / 100.25, end 100.26, usage 10 + 3
        TTFT 100 ms, E2E 250 ms, TPOT (250-100)/(3-1) = 75 ms, ITL 50 and 100 ms, 3/0.25 = 12 tok/s
    r2  sent 100.50, chunks 100.70 / 100.80, end 100.80, usage 11 (!) + 2
        TTFT 200 ms, E2E 300 ms, TPOT (300-200)/1 = 100 ms, ITL 100 ms, 2/0.3 = 6.667 tok/s
    r3  sent 100.20, failed at 100.40: no latency samples, but 0.2 s in flight
    r4  sent 101.00, chunk 101.05, end 101.10, usage 10 + 1: TTFT 50 ms, E2E 50 ms, no TPOT (one token),
        no ITL, 1/0.05 = 20 tok/s
    window: 100.0 .. 101.1 (end of the last measured request) = 1.1 s
    """
    return [
        rec(0, 99.0, [100.5, 100.6], 100.6, warmup=True),
        rec(1, 100.0, [100.10, 100.15, 100.25], 100.26),
        rec(2, 100.5, [100.70, 100.80], 100.80, prompt=11),
        rec(3, 100.2, [], 100.4, ok=False, output_len=3),
        rec(4, 101.0, [101.05], 101.10, output_len=1),
    ]


def test_shape_and_json(mixed):
    c = summarize(result(mixed, 100.0))
    assert set(c) == CLIENT_KEYS
    for key in ("per_request_output_tok_s", "ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"):
        assert set(c[key]) == DIST_KEYS
    # a closed loop adds the held window's λ and W and C (stats.held.held_littles_law); these 4 requests at C = 4
    # never had 4 in flight, so the window is empty: held_lambda_W null, held_requests 0
    assert set(c["littles_law"]) == {"L", "lambda_req_s", "W_s", "lambda_W", "ratio", "L_configured",
                                     "held_lambda_W", "held_requests"}
    assert c["schedule_lag_ms"] is None  # closed loop
    json.dumps(c)


def test_counts_and_throughput(mixed):
    c = summarize(result(mixed, 100.0))
    assert c["completed"] == 3
    assert c["failed"] == 1
    assert c["output_throughput_tok_s"] == pytest.approx(6 / 1.1)          # 3 + 2 + 1 tokens
    assert c["total_throughput_tok_s"] == pytest.approx((6 + 31) / 1.1)     # prompts 10 + 11 + 10
    assert c["request_throughput_req_s"] == pytest.approx(3 / 1.1)
    assert c["token_count_mismatches"] == 1                                 # r2's prompt_tokens


def test_steady_window(mixed):
    """Steady window 100.0 .. 101.0 (r4, the last measured send): r1's 3 chunks and r2's 2 fall inside, r4's
    only chunk (101.05) after it -> 5 tokens / 1.0 s. In flight: r1 0.26 + r2 0.30 + r3 0.20 + r4 0 = 0.76 s."""
    c = summarize(result(mixed, 100.0))
    assert c["steady_output_throughput_tok_s"] == pytest.approx(5.0)
    assert c["steady_mean_in_flight"] == pytest.approx(0.76)


def test_ttft(mixed):
    t = summarize(result(mixed, 100.0))["ttft_ms"]
    # sorted 50, 100, 200; linear interpolation at rank q*(n-1)
    assert t["mean"] == pytest.approx(350 / 3)
    assert t["p50"] == pytest.approx(100)
    assert t["p90"] == pytest.approx(180)   # rank 1.8 -> 100 + 0.8*100
    assert t["p95"] == pytest.approx(190)
    assert t["p99"] == pytest.approx(198)


def test_tpot_excludes_first_token(mixed):
    t = summarize(result(mixed, 100.0))["tpot_ms"]
    # r1 75 ms, r2 100 ms; r4 (one token) contributes nothing; a definition including the first token
    # would give 250/3 = 83.3 ms for r1.
    assert t["mean"] == pytest.approx(87.5)
    assert t["p50"] == pytest.approx(87.5)
    assert t["p90"] == pytest.approx(97.5)
    assert t["p99"] == pytest.approx(99.75)


def test_itl_pooled(mixed):
    t = summarize(result(mixed, 100.0))["itl_ms"]
    # pooled gaps 50, 100 (r1) and 100 (r2): mean 83.33; a mean of per-request means would be 87.5
    assert t["mean"] == pytest.approx(250 / 3)
    assert t["p50"] == pytest.approx(100)
    assert t["p90"] == pytest.approx(100)


def test_e2e_and_per_request(mixed):
    c = summarize(result(mixed, 100.0))
    assert c["e2e_ms"]["mean"] == pytest.approx(200)
    assert c["e2e_ms"]["p50"] == pytest.approx(250)
    assert c["per_request_output_tok_s"]["mean"] == pytest.approx((12 + 2 / 0.3 + 20) / 3)
    assert c["per_request_output_tok_s"]["p50"] == pytest.approx(12)


def test_in_flight_and_littles_law_with_errors(mixed):
    c = summarize(result(mixed, 100.0))
    # in flight: 0.26 + 0.30 + 0.20 (the failed one) + 0.10 = 0.86 s over 1.1 s
    assert c["mean_in_flight"] == pytest.approx(0.86 / 1.1)
    ll = c["littles_law"]
    assert ll["L"] == pytest.approx(0.86 / 1.1)
    assert ll["lambda_req_s"] == pytest.approx(3 / 1.1)
    assert ll["W_s"] == pytest.approx(0.2)                     # mean E2E of completed requests
    assert ll["lambda_W"] == pytest.approx(0.6 / 1.1)
    # the whole run's λ·W ÷ L (bookkeeping): 0.6 / 0.86 < 1, the failed request held a slot
    assert ll["lambda_W"] / ll["L"] == pytest.approx(0.6 / 0.86)
    # the check's ratio is λ·W over the held window ÷ C: 4 clients were never all in flight, so it has none
    assert ll["ratio"] is None and ll["held_requests"] == 0


def test_littles_law_on_a_closed_schedule():
    """Two workers, back-to-back 1 s requests from t=10 to t=14: L = 2, λ = 8 / 4 s = 2/s, W = 1 s."""
    records = []
    i = 0
    for _worker in range(2):
        for k in range(4):
            t0 = 10.0 + k
            records.append(rec(i, t0, [t0 + 0.25, t0 + 0.5, t0 + 1.0], t0 + 1.0))
            i += 1
    c = summarize(result(records, 10.0))
    assert c["mean_in_flight"] == pytest.approx(2.0)
    ll = c["littles_law"]
    assert ll["lambda_req_s"] == pytest.approx(2.0)
    assert ll["W_s"] == pytest.approx(1.0)
    # the whole run's λ·W ÷ L is 1 (bookkeeping); the check divides λ·W over the held window by C = 4 (the
    # spec's): the two workers' sends at t = 11 come before the two ends at that instant, so the count first
    # reaches 4 at t = 11; inside the window (11, 13] are the requests sent at 11 and 12 by both workers, 1 s each:
    # λ = 4 / 2 s = 2/s, W = 1 s, λ·W = 2 of C = 4 → 0.5 (two clients held of four)
    assert ll["lambda_W"] / ll["L"] == pytest.approx(1.0)
    assert ll["ratio"] == pytest.approx(0.5)
    assert c["output_throughput_tok_s"] == pytest.approx(24 / 4)


def test_in_flight_clipped_to_window():
    # one request from 9.5 to 10.5 and one from 10 to 11, window 10 .. 11: 0.5 + 1.0 = 1.5 s in 1 s
    records = [rec(0, 9.5, [10.5], 10.5), rec(1, 10.0, [11.0], 11.0)]
    assert summarize(result(records, 10.0))["mean_in_flight"] == pytest.approx(1.5)


def test_schedule_lag_open_loop():
    records = [
        rec(0, 5.001, [5.1], 5.1, scheduled=5.0),      # 1 ms
        rec(1, 5.203, [5.3], 5.3, scheduled=5.2),      # 3 ms
        rec(2, 5.52, [], 5.6, scheduled=5.5, ok=False),  # 20 ms (failed requests have a lag too)
    ]
    c = summarize(result(records, 5.0, mode="open"))
    lag = c["schedule_lag_ms"]
    assert lag["mean"] == pytest.approx(8.0)
    assert lag["p50"] == pytest.approx(3.0)
    assert lag["p99"] == pytest.approx(3 + 0.98 * 17)


def test_errors_only():
    records = [rec(0, 1.0, [], 2.0, ok=False, output_len=4), rec(1, 1.5, [], 2.5, ok=False, output_len=4)]
    c = summarize(result(records, 1.0))
    assert c["completed"] == 0 and c["failed"] == 2
    assert c["output_throughput_tok_s"] == 0.0
    assert c["ttft_ms"] == {k: None for k in DIST_KEYS}
    assert c["littles_law"]["ratio"] is None
    assert c["mean_in_flight"] == pytest.approx(2.0 / 1.5)


def test_missing_usage_is_a_mismatch_and_falls_back_to_chunks():
    r = rec(0, 1.0, [1.1, 1.2, 1.3], 1.3)
    r.prompt_tokens = None
    r.completion_tokens = None
    c = summarize_records([r], 1.0)
    assert c["token_count_mismatches"] == 1
    assert c["output_throughput_tok_s"] == pytest.approx(3 / 0.3)
    assert c["total_throughput_tok_s"] == pytest.approx((3 + 10) / 0.3)


def test_distribution_percentiles():
    d = distribution(range(1, 101))
    assert d["mean"] == pytest.approx(50.5)
    assert d["p50"] == pytest.approx(50.5)   # rank 49.5
    assert d["p90"] == pytest.approx(90.1)   # rank 89.1 -> 90 + 0.1
    assert d["p95"] == pytest.approx(95.05)
    assert d["p99"] == pytest.approx(99.01)
    assert distribution([7.0], scale=1e3) == {k: 7000.0 for k in DIST_KEYS}
    assert distribution([]) == {k: None for k in DIST_KEYS}


def test_glossary_covers_the_client_object():
    for key in CLIENT_KEYS | {"goodput", "measurement_window", "percentiles"}:
        assert key in GLOSSARY and len(GLOSSARY[key]) > 40
    assert "excludes the first token" in GLOSSARY["tpot_ms"]
    assert "pooled" in GLOSSARY["itl_ms"]
    assert "denominator" in GLOSSARY["failed"]


def test_a_points_ttft_splits_into_vllms_queue_prefill_api_server_and_http_legs():
    """Client TTFT 10 ms, vLLM's TTFT 7.5 ms of which queue 0.5 and prefill 4: API server 3 ms, HTTP 2.5 ms."""
    point = {"client": {"ttft_ms": {"mean": 10.0}},
             "server": {"ttft_ms": {"mean": 7.5}, "queue_ms": {"mean": 0.5}, "prefill_ms": {"mean": 4.0}}}
    legs = stats.frontend_legs(point)
    assert (legs.api_server_ms, legs.http_ms) == (3.0, 2.5)
    assert legs.queue_ms + legs.prefill_ms + legs.api_server_ms + legs.http_ms == legs.client_ttft_ms
    no_server = stats.frontend_legs({"client": {"ttft_ms": {"mean": 10.0}}})
    assert math.isnan(no_server.api_server_ms) and math.isnan(no_server.http_ms)


def test_a_closed_loop_turnaround_is_the_wait_after_the_latest_reply_that_had_ended():
    """Two clients: A ends at 1.0 s, B at 1.5 s; the sends at 1.002 s and 1.5005 s turned around in 2 and 0.5 ms,
    the first two sends (no reply before them) and the failed request count for nothing."""
    rows = [{"sent_s": 0.0, "end_s": 1.0, "status": "ok"}, {"sent_s": 0.0, "end_s": 1.5, "status": "ok"},
            {"sent_s": 1.002, "end_s": 2.0, "status": "ok"}, {"sent_s": 1.5005, "end_s": 2.5, "status": "ok"},
            {"sent_s": 2.2, "end_s": 2.3, "status": "error"}]
    assert stats.closed_loop_turnarounds_ms(rows) == pytest.approx([0.5, 2.0])
