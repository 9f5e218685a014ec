"""Little's law as the check that a closed loop held its concurrency (trial s16, H2): λ·W over the held window
(from the moment C requests were first in flight to the last measured send; λ the requests in flight inside it per
second, W their mean time inside it) ÷ C. A starved load generator reads the
share of C it held and FAILS; a long drain after the last send is outside the window and does not move it. Every
expected value below is worked out by hand from the schedule of the records, never copied from the code."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.measure.loadgen import LoadResult, LoadSpec, RequestRecord
from pytest_roofline.measure.results import RecordedMeasurement
from pytest_roofline.measure.stats import summarize
from pytest_roofline.measure.stats.held import (
    completion_rate,
    held_littles_law,
    is_rate_flag,
    littles_reading,
    rate_flag,
    rate_shortfall,
)
from pytest_roofline.scoring import VerdictStatus, score

SPEC = """hardware: cpu
model: roofline-tiny
engine: {name: vllm, version: 0.32.0, cpu_kvcache_space: 1 GiB, args: {dtype: bfloat16, max_model_len: 1024}}
workload: {input_len: 128, output_len: 32}
sweep: {mode: closed, concurrency: [4]}
predictions:
  - {id: ll, quantity: littles_law_ratio, at: {concurrency: 4}, predicted: 1.0, tolerance: ±5%}
"""


def _rec(i: int, sent: float, end: float) -> RequestRecord:
    # one token chunk at the end: E2E (send → last chunk) = end − sent
    return RequestRecord(index=i, request_id=f"r{i}", warmup=False, input_len=10, output_len=1, sent_s=sent,
                         first_token_s=end, chunk_times_s=[end], end_s=end, prompt_tokens=10, completion_tokens=1,
                         status="ok")


def _closed_loop(service_s: list[list[float]], gap_s: float) -> list[RequestRecord]:
    """Clients that all send at t = 0; each sends its next request ``gap_s`` after its previous one ends."""
    out: list[RequestRecord] = []
    for times in service_s:
        t = 0.0
        for s in times:
            out.append(_rec(len(out), t, t + s))
            t += s + gap_s
    return out


def _summary(records: list[RequestRecord]) -> dict[str, Any]:
    spec = LoadSpec(model="m", token_id_range=(10, 300), mode="closed", concurrency=4, num_requests=len(records))
    return summarize(LoadResult(spec=spec, records=records, run_start_s=-1.0, measure_start_s=0.0,
                                run_end_s=20.0, wall_anchor=1.7e9, perf_anchor_s=-1.0), steady_state=None)


def _verdict(client: dict[str, Any]) -> Any:
    spec = loads_spec(SPEC)
    meas = RecordedMeasurement({"points": [{"id": "closed-c4", "mode": "closed", "concurrency": 4,
                                            "client": client}]})
    return score(spec, spec.predictions[0], "measured", meas)


def test_a_starved_generator_holding_3_of_4_reads_075_and_fails() -> None:
    # C = 4, each request takes 0.3 s, and the load generator sends the next one 0.1 s after one ends: each client
    # is busy 0.3 s of every 0.4 s, so 3 of 4 are in flight on average. 10 requests per client, sends at
    # 0, 0.4, ..., 3.6 s. The 4 were first in flight at t = 0; the held window is (0, 3.6]. The requests with time
    # inside it: those sent at 0, 0.4, ..., 3.2 (the ones sent at 3.6 have none) = 9 per client = 36, each 0.3 s
    # inside → λ = 36 / 3.6 = 10 req/s, W = 0.3 s, λ·W = 3, ÷ C = 0.75.
    records = _closed_loop([[0.3] * 10] * 4, gap_s=0.1)
    held = held_littles_law(records, 4)
    assert held is not None
    assert held["held_requests"] == 36
    assert held["held_lambda_req_s"] == pytest.approx(10.0)
    assert held["held_W_s"] == pytest.approx(0.3)
    client = _summary(records)
    assert client["littles_law"]["ratio"] == pytest.approx(0.75)
    v = _verdict(client)
    # −25 % against ±5 %: FAIL, and decisive (the point's held flag does not make this verdict inconclusive)
    assert v.status is VerdictStatus.FAIL, v.reason
    assert v.measured_value == pytest.approx(0.75)


def test_a_long_drain_after_the_last_send_reads_1() -> None:
    # C = 4, no gap: each client sends 10 requests of 0.3 s back to back (sends at 0, 0.3, ..., 2.7 s), except that
    # one client's last request takes 5 s (ends at 7.7 s). The held window is (0, 2.7]: the requests sent at 0,
    # ..., 2.4 = 9 per client = 36, 0.3 s each inside it (the 5 s one starts at 2.7: none) → λ = 36 / 2.7 =
    # 13.33 req/s, W = 0.3 s, λ·W = 4 → 1.000.
    # Over the whole run it would read 40 / 7.7 s × mean E2E (39 × 0.3 + 5) / 40 = 0.4175 s = 2.169 → 0.54 of C.
    records = _closed_loop([[0.3] * 10] * 3 + [[0.3] * 9 + [5.0]], gap_s=0.0)
    client = _summary(records)
    ll = client["littles_law"]
    assert ll["lambda_W"] / 4 == pytest.approx((40 / 7.7) * (39 * 0.3 + 5) / 40 / 4)  # the whole run: 0.54
    assert ll["held_requests"] == 36
    assert ll["ratio"] == pytest.approx(1.0)
    v = _verdict(client)
    assert v.status is VerdictStatus.PASS, v.reason
    assert v.measured_value == pytest.approx(1.0)


def test_the_point_s_held_flag_stays_off_this_verdict() -> None:
    # the starved point of the first test, with the held flag the sweep gives it: still FAIL, not INCONCLUSIVE
    records = _closed_loop([[0.3] * 10] * 4, gap_s=0.1)
    client = _summary(records)
    spec = loads_spec(SPEC)
    flag = "concurrency not held: 3.00 of 4 requests in flight on average (75%), below 90%"
    meas = RecordedMeasurement({"points": [{"id": "closed-c4", "mode": "closed", "concurrency": 4,
                                            "client": client, "flags": [flag]}]})
    v = score(spec, spec.predictions[0], "measured", meas)
    assert v.status is VerdictStatus.FAIL, v.reason


def test_a_held_loop_with_staggered_long_requests_reads_1_where_completions_would_not() -> None:
    # The live case the E2E-of-completions count got wrong (C = 8, 3 requests per client, 5 s each, desynchronised):
    # here C = 2, client A's requests take 1, 3, 1 s (sends 0, 1, 4; ends 1, 4, 5), client B's 2, 2, 2 s (sends
    # 0, 2, 4; ends 2, 4, 6). Both in flight from t = 0 to the last send at 4: held. Window (0, 4]: time inside it
    # A 1 + 3 + 0, B 2 + 2 + 0 = 8 s over 4 requests → λ = 4 / 4 s = 1 req/s, W = 2 s, λ·W = 2 → 1.0.
    # (The completions inside it, at 1, 2, 4, 4, have mean E2E (1 + 2 + 3 + 2) / 4 = 2 s, λ = 4 / 4: also 2 here; the
    # live point read 0.70 that way because the window's end is the slowest client's last send.)
    records = [_rec(0, 0.0, 1.0), _rec(1, 1.0, 4.0), _rec(2, 4.0, 5.0),
               _rec(3, 0.0, 2.0), _rec(4, 2.0, 4.0), _rec(5, 4.0, 6.0)]
    held = held_littles_law(records, 2)
    assert held is not None and held["held_requests"] == 4
    assert held["held_lambda_req_s"] == pytest.approx(1.0) and held["held_W_s"] == pytest.approx(2.0)
    assert held["held_lambda_W"] / 2 == pytest.approx(1.0)


def test_a_point_whose_requests_were_all_out_at_once_is_not_scored() -> None:
    # an adaptive stop after C requests: 4 clients, 4 requests, all sent at t = 0 (ends 0.3, 0.4, 0.5, 0.6). The
    # count reached 4 at the last send: no held window (held_requests 0), held_mean_in_flight = C by construction
    # (stats.held.held_in_flight) → 4 / 4 = 1.0, which the check cannot fail: shown (the sweep table, the chart's
    # reading) but not scored, a SKIP that says why and what to change
    records = [_rec(i, 0.0, 0.3 + 0.1 * i) for i in range(4)]
    client = _summary(records)
    assert client["littles_law"]["held_requests"] == 0 and client["held_mean_in_flight"] == 4
    reading = littles_reading(client, 4)
    assert reading is not None and reading.vacuous and reading.ratio == pytest.approx(1.0)
    v = _verdict(client)
    assert v.status is VerdictStatus.SKIP and v.measured_value is None, v.reason
    assert "by construction" in v.reason and "requests_per_point" in v.reason
    # 3 requests for 4 clients never reached 4 in flight: no held figure; the steady window (first to last send)
    # spans no time, so the whole run's λ·W ÷ C: λ = 3 / 0.5 s = 6 req/s, W = (0.3 + 0.4 + 0.5) / 3 = 0.4 s,
    # λ·W = 2.4 → 2.4 / 4 = 0.6: FAIL (the held flag names why: fewer requests than clients)
    client = _summary(records[:3])
    v = _verdict(client)
    assert v.status is VerdictStatus.FAIL and v.measured_value == pytest.approx(0.6), v.reason


def test_older_files_read_the_held_in_flight_and_peers_are_not_scored() -> None:
    # a file written before the held window's λ and W: held_mean_in_flight 3.6 of C = 4 → 0.9
    old = {"held_mean_in_flight": 3.6, "littles_law": {"L": 3.5, "lambda_W": 3.49, "ratio": 0.997}}
    r = littles_reading(old, 4)
    assert r is not None and r.ratio == pytest.approx(0.9)
    # a peer's file: whole-run λ·W of the configured C holds the drain; not read
    peer = {"littles_law": {"L": None, "L_configured": 4.0, "lambda_W": 3.64, "ratio": None,
                            "not_checked": "vllm bench serve records its configured --max-concurrency"}}
    assert littles_reading(peer, 4) is None
    # open loop: λ·W ÷ the client's own L (bookkeeping): 2.97 / 3.0 = 0.99
    assert littles_reading({"littles_law": {"L": 3.0, "lambda_W": 2.97}}, None).ratio == pytest.approx(0.99)


def test_an_open_loop_point_below_its_offered_rate_is_flagged_beyond_chance() -> None:
    # 60 requests completing evenly from 1.0 s to 2.2676 s: 59 intervals in 1.2676 s = 46.55 req/s, 78% of 60.
    # Count bound: 46.55 × (1 + 1.96 / √59) = 46.55 × 1.2552 = 58.43 < 60 → not chance: flagged.
    records = [_rec(i, 0.0, 1.0 + i * (1.2676 / 59)) for i in range(60)]
    got = completion_rate(records)
    assert got is not None and got[0] == pytest.approx(46.545, rel=1e-3) and got[1] == 59
    flag = rate_flag(records, 60.0)
    assert flag is not None and is_rate_flag(flag) and "78%" in flag
    # 50 of 60 (83%): 50 × 1.2552 = 62.8 ≥ 60, chance explains it: no flag
    assert rate_shortfall(50.0, 60.0, 59) is None
    # a 95% share is not flagged whatever the count (the 90% floor)
    assert rate_shortfall(57.0, 60.0, 100_000) is None
    # bursty arrivals (gamma, burstiness 0.25) quadruple the count variance: 46.55 × (1 + 1.96 / √(59 × 0.25))
    # = 46.55 × 1.5104 = 70.3 ≥ 60 → not flagged
    assert rate_flag(records, 60.0, burstiness=0.25) is None
    # a closed loop has no offered rate
    assert rate_flag(records, None) is None
